package csrcleaner

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpired(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(ty certificatesv1.RequestConditionType, at metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: ty, Status: corev1.ConditionTrue, LastUpdateTime: at}
	}
	csr := func(created metav1.Time, cert []byte, conds ...certificatesv1.CertificateSigningRequestCondition) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: conds, Certificate: cert}}
	}
	valid, expired := certPEM(t, now.Add(24*time.Hour)), certPEM(t, now.Add(-time.Minute))
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		{"fresh pending", csr(ago(time.Hour), nil), false},
		{"old pending", csr(ago(25*time.Hour), nil), true},
		{"recently issued", csr(ago(2*time.Hour), valid, cond(certificatesv1.CertificateApproved, ago(30*time.Minute))), false},
		{"issued long ago", csr(ago(2*time.Hour), valid, cond(certificatesv1.CertificateApproved, ago(2*time.Hour))), true},
		{"approved long ago, not issued", csr(ago(30*time.Hour), nil, cond(certificatesv1.CertificateApproved, ago(2*time.Hour))), false},
		{"issued certificate expired", csr(ago(2*time.Hour), expired, cond(certificatesv1.CertificateApproved, ago(10*time.Minute))), true},
		{"recently denied", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateDenied, ago(10*time.Minute))), false},
		{"denied long ago", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateDenied, ago(2*time.Hour))), true},
		{"failed long ago", csr(ago(2*time.Hour), nil, cond(certificatesv1.CertificateApproved, ago(10*time.Minute)),
			cond(certificatesv1.CertificateFailed, ago(2*time.Hour))), true},
	} {
		if got, why := Expired(tc.csr, now); got != tc.want {
			t.Errorf("%s: expired %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestPlan(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	csr := func(name string, age time.Duration) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
	}
	p := plan(State{CSRs: []*certificatesv1.CertificateSigningRequest{csr("fresh", time.Hour), csr("stale", 25*time.Hour)}, Now: now})
	if len(p.Delete) != 1 || p.Delete[0].CSR.Name != "stale" || p.Delete[0].Why != "pending for more than a day" {
		t.Errorf("plan deletes %+v, want stale (pending for more than a day)", p.Delete)
	}
	if p := plan(State{Now: now}); len(p.Delete) != 0 {
		t.Errorf("nothing to sweep: %+v", p)
	}
}
