package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const replicaLimitPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  matchConstraints:
    resourceRules:
      - apiGroups: [apps]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [deployments]
  validations:
    - expression: object.spec.replicas <= 5
      message: replicas must be no greater than 5
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [Deny]
`

// TestKubectlValidatingAdmissionPolicy: a policy and binding applied with
// kubectl refuse a deployment of 6 replicas with the policy's message and
// admit 5; kubectl get and explain know the kinds.
func TestKubectlValidatingAdmissionPolicy(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	out := c.must("apply", "-f", writeFile(t, dir, "policy.yaml", replicaLimitPolicy))
	contains(t, out, "validatingadmissionpolicy.admissionregistration.k8s.io/replica-limit created",
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/replica-limit-binding created")
	out = c.must("get", "validatingadmissionpolicies")
	contains(t, out, "NAME", "VALIDATIONS", "PARAMKIND", "AGE", "replica-limit", "<unset>")
	out = c.must("get", "validatingadmissionpolicybindings")
	contains(t, out, "POLICYNAME", "PARAMREF", "replica-limit-binding")
	out = c.must("explain", "validatingadmissionpolicy.spec.validations")
	contains(t, out, "messageExpression", "expression")
	c.eventually([]string{"1"}, "get", "validatingadmissionpolicy", "replica-limit", "-o", "jsonpath={.status.observedGeneration}")

	six := writeFile(t, dir, "six.yaml", strings.SplitN(fmt.Sprintf(webDeployment, 6), "---", 2)[0])
	// kubectl renders a 422 from its causes, as it does upstream's.
	want := `The deployments "web" is invalid: : ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas must be no greater than 5`
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := c.run("apply", "-f", six)
		if err != nil && strings.Contains(out, want) {
			break
		}
		if err == nil {
			c.must("delete", "deployment", "web")
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 6-replica deployment: %v\n%s\nwant a refusal with %s", err, out, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	five := writeFile(t, dir, "five.yaml", strings.SplitN(fmt.Sprintf(webDeployment, 5), "---", 2)[0])
	contains(t, c.must("apply", "-f", five), "deployment.apps/web created")
}
