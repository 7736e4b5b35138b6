package resourcequota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/api/quota"
)

// request is one write as the quota check sees it.
type request struct {
	op, subresource string
	obj, old        runtime.Object
	now             time.Time
}

// refusal is a check's verdict against the request (a 403), as opposed to
// an error in checking.
type refusal struct{ error }

// check charges r against quotas (upstream's CheckRequest): the new
// status.used of each quota the write changes, by index into quotas, or a
// refusal. An empty answer means the write changes no quota.
func check(quotas []corev1.ResourceQuota, r request, e quota.Evaluator) (map[int]corev1.ResourceList, error) {
	var matching []int
	for i := range quotas {
		q := &quotas[i]
		ok, err := quota.Matches(e, q, r.obj)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		limited := e.MatchingResources(quota.Names(q.Status.Hard))
		if err := e.Constraints(limited, r.obj); err != nil {
			return nil, refusal{fmt.Errorf("failed quota: %s: %v", q.Name, err)}
		}
		for _, n := range limited {
			if _, ok := q.Status.Used[n]; !ok {
				return nil, refusal{fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, quota.NamesString(limited))}
			}
		}
		matching = append(matching, i)
	}
	if len(matching) == 0 {
		return nil, nil
	}
	usage, err := e.Usage(r.obj, r.now)
	if err != nil {
		return nil, err
	}
	if neg := quota.Negative(usage); len(neg) > 0 {
		return nil, refusal{fmt.Errorf("quota usage is negative for resource(s): %s", quota.NamesString(neg))}
	}
	delta := map[int]corev1.ResourceList{}
	for _, i := range matching {
		delta[i] = usage
	}
	if r.op == quota.Update {
		if r.old == nil {
			return nil, refusal{fmt.Errorf("unable to get previous usage since prior version of object was not found")}
		}
		// An update is charged what it adds, where the old object counted
		// against the same quota; an update of an object never stored (a
		// create by update) is charged in full.
		if m, err := meta.Accessor(r.old); err == nil && m.GetResourceVersion() != "" {
			prev, err := e.Usage(r.old, r.now)
			if err != nil {
				return nil, err
			}
			added := quota.SubtractNonNegative(usage, prev)
			for _, i := range matching {
				ok, err := quota.Matches(e, &quotas[i], r.old)
				if err != nil {
					return nil, err
				}
				if ok {
					delta[i] = added
				}
			}
		}
	}
	out := map[int]corev1.ResourceList{}
	for _, i := range matching {
		q := &quotas[i]
		hard := q.Status.Hard
		requested := quota.Mask(quota.RemoveZeros(delta[i]), quota.Names(hard))
		if len(requested) == 0 {
			continue
		}
		used := quota.Add(q.Status.Used, requested)
		if r.subresource != "status" {
			if ok, exceeded := quota.LessThanOrEqual(quota.Mask(used, quota.Names(requested)), hard); !ok {
				return nil, refusal{fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
					quota.String(quota.Mask(requested, exceeded)), quota.String(quota.Mask(q.Status.Used, exceeded)),
					quota.String(quota.Mask(hard, exceeded)))}
			}
		}
		out[i] = used
	}
	return out, nil
}
