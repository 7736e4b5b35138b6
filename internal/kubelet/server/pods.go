package server

import (
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
)

// pods serves /pods: a v1 PodList of the pods the agent runs (its API
// server's pods and its static pods, not their mirror pods), as upstream's
// kubelet answers it.
func (h *Handler) pods(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	if h.Pods == nil {
		http.Error(w, "this agent does not list its pods", http.StatusNotImplemented)
		return
	}
	list := corev1.PodList{Items: h.Pods()}
	list.Kind, list.APIVersion = "PodList", "v1"
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	for i := range list.Items {
		list.Items[i].Kind, list.Items[i].APIVersion = "Pod", "v1"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&list)
}
