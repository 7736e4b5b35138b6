package kubelet

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"plainkube.dev/plainkube/internal/kubelet/static"
)

// runningPods are the pods the agent runs, for the agent API's /pods and
// its metrics: the API server's pods of this node (not mirror pods) and
// the static pods with their last status, sorted by namespace and name.
func (a *Agent) runningPods() []corev1.Pod {
	var out []corev1.Pod
	if a.apiSynced.Load() && a.pods != nil {
		pods, _ := a.pods.List(labels.Everything())
		for _, p := range pods {
			if !static.IsMirrorPod(p) {
				out = append(out, *p.DeepCopy())
			}
		}
	}
	if a.static != nil {
		for _, key := range a.static.Keys() {
			cur, _ := a.static.Get(key)
			if cur == nil {
				continue
			}
			p := cur.DeepCopy()
			if st, ok := a.static.LastStatus(p.UID); ok {
				p.Status = st
			}
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(x, y corev1.Pod) int {
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}
