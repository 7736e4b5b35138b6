package e2e

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const webBudget = `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 2
  selector:
    matchLabels: {app: web}
`

// readyWebPods counts the pods of app=web that are ready and not being
// deleted.
const readyWebPods = `jsonpath={range .items[*]}{.metadata.deletionTimestamp}{"/"}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}`

func countReady(out string) int {
	n := 0
	for _, f := range strings.Fields(out) {
		if f == "/True" {
			n++
		}
	}
	return n
}

// TestDrainHonoursDisruptionBudget: a Deployment of 3 on one simulated
// node under a budget of minAvailable 2; kubectl drain evicts them one at
// a time (the budget refuses the rest with 429 until each replacement is
// ready on the other node, which may be before drain asks), and never
// are fewer than 2 ready. Then an eviction that would break the budget is
// refused with upstream's answer.
func TestDrainHonoursDisruptionBudget(t *testing.T) {
	c := startCluster(t, "--sim-nodes", "2")
	c.eventually([]string{"sim-1"}, "get", "nodes")
	c.must("cordon", "sim-1")
	dir := t.TempDir()
	c.must("apply", "-f", writeFile(t, dir, "web.yaml", webDeploymentFastStop), "-f", writeFile(t, dir, "pdb.yaml", webBudget))
	c.must("rollout", "status", "deployment/web", "--timeout=50s")
	c.eventually([]string{"disruptionsAllowed:1 "}, "get", "pdb", "web", "-o",
		`jsonpath=currentHealthy:{.status.currentHealthy} desiredHealthy:{.status.desiredHealthy} expectedPods:{.status.expectedPods} disruptionsAllowed:{.status.disruptionsAllowed} `)
	out := c.must("get", "pdb", "web", "-o", `jsonpath={.status.currentHealthy}/{.status.desiredHealthy}/{.status.expectedPods} {.status.conditions[0].reason}`)
	if out != "3/2/3 SufficientPods" {
		t.Fatalf("budget status %q, want 3/2/3 SufficientPods", out)
	}
	c.must("uncordon", "sim-1")

	// Watch the ready pods while the node drains.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	minReady, samples := 3, 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if out, err := c.run("get", "pods", "-l", "app=web", "-o", readyWebPods); err == nil {
				minReady, samples = min(minReady, countReady(out)), samples+1
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	start := time.Now()
	drained, err := c.run("drain", "sim-0", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=45s")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, drained)
	}
	t.Logf("drained in %v; %d samples, at least %d ready", time.Since(start).Round(time.Millisecond), samples, minReady)
	contains(t, drained, "node/sim-0 drained")
	// Whether drain met a refusal depends on how fast the replacements are
	// ready (simulated pods are ready within a moment, and then the budget
	// allows the next eviction at once): the invariant is the ready count.
	t.Logf("refused at least once: %v", strings.Contains(drained, "Cannot evict pod as it would violate the pod's disruption budget."))
	if strings.Count(drained, "evicted") < 3 {
		t.Errorf("drain output lacks three evictions:\n%s", drained)
	}
	if minReady < 2 {
		t.Errorf("%d ready pods seen during the drain, the budget wants 2", minReady)
	}
	if out := c.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.nodeName}"); strings.Contains(out, "sim-0") {
		t.Errorf("pods left on the drained node: %s", out)
	}

	// A budget of 3 over 3 allows nothing: a direct eviction gets 429.
	c.must("patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":3}}`)
	c.eventually([]string{"0 3"}, "get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed} {.status.desiredHealthy}")
	pod := strings.Fields(c.must("get", "pods", "-l", "app=web", "-o", "name"))[0]
	name := strings.TrimPrefix(pod, "pod/")
	ev := writeFile(t, dir, "eviction.json", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":`+strconv.Quote(name)+`}}`)
	out = c.mustFail("create", "--raw", "/api/v1/namespaces/default/pods/"+name+"/eviction", "-f", ev)
	contains(t, out, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests")
	if got := c.must("get", pod, "-o", "jsonpath={.metadata.deletionTimestamp}"); got != "" {
		t.Errorf("refused eviction deleted %s", pod)
	}
}
