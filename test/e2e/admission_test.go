package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestQuotaAndPodSecurity: with the real kubectl, a ResourceQuota stops a
// pod over it and a restricted namespace refuses a privileged pod, each
// with upstream's message; a warn label answers a warning.
func TestQuotaAndPodSecurity(t *testing.T) {
	c := startCluster(t)
	c.must("create", "namespace", "quota")
	c.must("create", "quota", "q", "--hard=pods=1", "-n", "quota")
	c.eventually([]string{"0"}, "get", "quota", "q", "-n", "quota", "-o", "jsonpath={.status.used.pods}")
	// The ServiceAccount admission plugin waits for the namespace's
	// default account, which a controller makes.
	runPod := func(ns string, args ...string) (string, error) {
		var out string
		var err error
		for range 50 {
			out, err = c.run(append([]string{"run", "-n", ns, "--image=busybox", "--restart=Never"}, args...)...)
			if err == nil || !strings.Contains(out, "service account") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		return out, err
	}
	if out, err := runPod("quota", "p1"); err != nil {
		t.Fatalf("first pod: %v\n%s", err, out)
	}
	out, err := runPod("quota", "p2")
	if err == nil {
		t.Fatalf("a pod over the quota was created:\n%s", out)
	}
	contains(t, out, `Error from server (Forbidden): pods "p2" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`)

	c.must("create", "namespace", "strict")
	c.must("label", "namespace", "strict", "pod-security.kubernetes.io/enforce=restricted")
	out, err = runPod("strict", "priv", "--privileged")
	if err == nil {
		t.Fatalf("a privileged pod was created in a restricted namespace:\n%s", out)
	}
	contains(t, out, `Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "priv" must not set securityContext.privileged=true)`)

	c.must("create", "namespace", "warned")
	c.must("label", "namespace", "warned", "pod-security.kubernetes.io/warn=baseline")
	out, err = runPod("warned", "priv", "--privileged")
	if err != nil {
		t.Fatalf("warn only: %v\n%s", err, out)
	}
	contains(t, out, `Warning: would violate PodSecurity "baseline:latest": privileged (container "priv" must not set securityContext.privileged=true)`, "pod/priv created")
}
