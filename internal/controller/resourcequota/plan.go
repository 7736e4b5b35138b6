package resourcequota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/api/quota"
)

// State is one quota and the objects of its namespace it may count.
type State struct {
	Quota *corev1.ResourceQuota
	// Objects are the namespace's objects of each resource the quota's
	// evaluators count.
	Objects map[schema.GroupResource][]runtime.Object
	Now     time.Time
}

// Plan is the status to write, if Write.
type Plan struct {
	Write  bool
	Status corev1.ResourceQuotaStatus
	// Err is why the usage could not be counted (nothing is written).
	Err error
}

// plan recounts the quota: status.hard is spec.hard; status.used is the
// usage of the objects for every resource an evaluator counts, the value
// there was for any other resource of spec.hard, and nothing for a
// resource spec.hard no longer names. Write when either differs.
func plan(st State) Plan {
	q := st.Quota
	counted, err := quota.Used(q, func(gr schema.GroupResource) ([]runtime.Object, error) {
		objs, ok := st.Objects[gr]
		if !ok {
			return nil, fmt.Errorf("the objects of %s were not observed", gr)
		}
		return objs, nil
	}, st.Now)
	if err != nil {
		return Plan{Err: err}
	}
	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	for k, v := range counted {
		used[k] = v
	}
	used = quota.Mask(used, quota.Names(q.Spec.Hard))
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	write := q.Status.Hard == nil || q.Status.Used == nil ||
		!quota.Equal(hard, q.Status.Hard) || !quota.Equal(used, q.Status.Used)
	return Plan{Write: write, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}
