package server

import (
	"encoding/json"
	"errors"
	"net/http"
)

// statsSummary serves /stats/summary: the node's and its pods' usage (the
// summary API's JSON, package stats).
func (h *Handler) statsSummary(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	if h.Summary == nil {
		http.Error(w, "this agent does not sample usage", http.StatusNotImplemented)
		return
	}
	s, err := h.Summary()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s)
}

var errNoSummary = errors.New("this agent does not sample usage")
