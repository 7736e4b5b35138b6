package webhooktest

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// Server is a webhook answering with its answer function.
type Server struct {
	*httptest.Server
	// CAPEM is the certificate to trust (the caBundle).
	CAPEM    []byte
	mu       sync.Mutex
	requests []*admissionv1.AdmissionRequest
}

// New starts a webhook answering each review with answer (the uid is
// filled in); it stops when the test ends.
func New(t testing.TB, answer func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, review.Request)
		s.mu.Unlock()
		resp := answer(review.Request)
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(s.Close)
	s.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}

// Requests are the review requests received so far.
func (s *Server) Requests() []*admissionv1.AdmissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), s.requests...)
}

// Reset forgets the requests received.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}
