package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// certificate is a Certificate of the example CRD (/work/shared/examples).
const certificate = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: %s
spec:
  secretName: %s-tls
  dnsNames: [%s.example.com]
  issuerRef:
    name: issuer
    kind: Issuer
`

const certificatesCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: certificates.cert-manager.io
spec:
  group: cert-manager.io
  names:
    kind: Certificate
    listKind: CertificateList
    plural: certificates
    singular: certificate
    shortNames: [cert, certs]
    categories: [cert-manager]
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [secretName, issuerRef]
              properties:
                secretName:
                  type: string
                dnsNames:
                  type: array
                  items:
                    type: string
                issuerRef:
                  type: object
                  properties:
                    name:
                      type: string
                    kind:
                      type: string
            status:
              type: object
              properties:
                conditions:
                  type: array
                  items:
                    type: object
                    x-kubernetes-preserve-unknown-fields: true
`

func certYAML(name string) string {
	return strings.ReplaceAll(certificate, "%s", name)
}

func (c *cluster) applyCRD(t *testing.T, dir, name, yaml string) {
	t.Helper()
	c.must("apply", "-f", writeFile(t, dir, name+".yaml", yaml))
	c.must("wait", "--for", "condition=established", "--timeout=20s", "crd/"+name)
}

func TestKubectlCustomResources(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	c.applyCRD(t, dir, "certificates.cert-manager.io", certificatesCRD)
	out := c.must("get", "crd")
	contains(t, out, "NAME", "CREATED AT", "certificates.cert-manager.io")
	out = c.must("api-resources", "--api-group=cert-manager.io")
	contains(t, out, "certificates", "cert,certs", "cert-manager.io/v1", "true", "Certificate")

	out = c.must("apply", "-f", writeFile(t, dir, "foo.yaml", certYAML("foo")))
	contains(t, out, "certificate.cert-manager.io/foo created")
	out = c.must("get", "certs")
	contains(t, out, "NAME", "AGE", "foo")
	out = c.must("get", "certificates", "-o", "wide")
	if first := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(first, " ") != "NAME AGE" {
		t.Errorf("get -o wide columns %v", first)
	}
	out = c.must("get", "cert-manager")
	contains(t, out, "NAME", "foo")
	out = c.must("explain", "certificate.spec")
	contains(t, out, "KIND:       Certificate", "secretName\t<string> -required-", "dnsNames\t<[]string>", "issuerRef\t<Object> -required-")

	// A Certificate without secretName is refused with a 422 naming it.
	bad := strings.Replace(certYAML("bad"), "  secretName: bad-tls\n", "", 1)
	out = c.mustFail("create", "-f", writeFile(t, dir, "bad.yaml", bad))
	contains(t, out, `The Certificate "bad" is invalid: spec.secretName: Required value`)
	// Unknown fields: kubectl asks for strict validation.
	out = c.mustFail("apply", "-f", writeFile(t, dir, "unknown.yaml", certYAML("unknown")+"  bogus: 1\n"))
	contains(t, out, `strict decoding error: unknown field "spec.bogus"`)

	// Status through the subresource; spec changes bump generation, status ones do not.
	c.must("patch", "cert", "foo", "--subresource=status", "--type=merge", "-p", `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)
	if got := c.must("get", "cert", "foo", "-o", "jsonpath={.status.conditions[0].type} {.metadata.generation}"); got != "Ready 1" {
		t.Errorf("after status patch: %q", got)
	}
	c.must("patch", "cert", "foo", "--type=merge", "-p", `{"spec":{"secretName":"other"},"status":{"conditions":[]}}`)
	if got := c.must("get", "cert", "foo", "-o", "jsonpath={.spec.secretName} {.metadata.generation} {.status.conditions[0].type}"); got != "other 2 Ready" {
		t.Errorf("after spec patch: %q", got)
	}
	out = c.mustFail("patch", "cert", "foo", "-p", `{"spec":{"secretName":"x"}}`)
	contains(t, out, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
	out = c.must("apply", "--server-side", "-f", writeFile(t, dir, "ssa.yaml", certYAML("ssa")))
	contains(t, out, "certificate.cert-manager.io/ssa serverside-applied")

	// A watch sees ADDED, MODIFIED and DELETED.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch := exec.CommandContext(ctx, c.kubectl, "get", "--raw", "/apis/cert-manager.io/v1/namespaces/default/certificates?watch=true&timeoutSeconds=10&resourceVersion="+
		c.must("get", "certs", "-o", "jsonpath={.metadata.resourceVersion}"))
	watch.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig(), "HOME="+c.dataDir)
	stdout, _ := watch.StdoutPipe()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer watch.Process.Kill()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()
	time.Sleep(300 * time.Millisecond)
	c.must("apply", "-f", writeFile(t, dir, "w.yaml", certYAML("watched")))
	c.must("label", "cert", "watched", "a=b")
	c.must("delete", "cert", "watched")
	var types []string
	deadline := time.After(15 * time.Second)
	for len(types) < 3 {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("watch ended after %v", types)
			}
			if strings.Contains(e, `"name":"watched"`) {
				types = append(types, e[strings.Index(e, `"type":"`)+8:][:strings.Index(e[strings.Index(e, `"type":"`)+8:], `"`)])
			}
		case <-deadline:
			t.Fatalf("watch saw %v", types)
		}
	}
	if strings.Join(types, ",") != "ADDED,MODIFIED,DELETED" {
		t.Errorf("watch events %v", types)
	}

	// A restart keeps serving them.
	c.stop()
	c.start()
	out = c.must("get", "certs")
	contains(t, out, "foo", "ssa")

	// Deleting the CRD deletes the instances; then the route answers 404.
	out = c.must("delete", "crd", "certificates.cert-manager.io", "--timeout=30s")
	contains(t, out, `customresourcedefinition.apiextensions.k8s.io "certificates.cert-manager.io" deleted`)
	out = c.mustFail("get", "--raw", "/apis/cert-manager.io/v1/namespaces/default/certificates")
	contains(t, out, "NotFound")
	c.applyCRD(t, dir, "certificates.cert-manager.io", certificatesCRD)
	out = c.must("get", "certs", "-A")
	contains(t, out, "No resources found")
}

const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: self.replicas <= 10, message: at most 10 replicas}
            - {rule: self.color == oldSelf.color, message: color is immutable}
            properties:
              replicas: {type: integer, default: 1}
              color: {type: string, default: red}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

func TestKubectlCustomResourceSchemasAndScale(t *testing.T) {
	c := startCluster(t)
	dir := t.TempDir()
	c.applyCRD(t, dir, "widgets.example.com", widgetsCRD)
	c.must("apply", "-f", writeFile(t, dir, "w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"))
	// Defaults, printer columns (Color only with -o wide).
	out := c.must("get", "wd")
	contains(t, out, "NAME", "REPLICAS", "AGE", "w ", " 1 ")
	if strings.Contains(out, "COLOR") {
		t.Errorf("priority-1 column without -o wide:\n%s", out)
	}
	out = c.must("get", "wd", "-o", "wide")
	contains(t, out, "COLOR", "red")
	// kubectl scale goes through the scale subresource.
	c.must("scale", "widget", "w", "--replicas=3")
	if got := c.must("get", "wd", "w", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); got != "3 2" {
		t.Errorf("after scale: %q", got)
	}
	// CEL rules, with a transition rule.
	out = c.mustFail("scale", "widget", "w", "--replicas=11")
	contains(t, out, "at most 10 replicas")
	out = c.mustFail("patch", "wd", "w", "--type=merge", "-p", `{"spec":{"color":"blue"}}`)
	contains(t, out, "color is immutable")
	// The deprecated version warns.
	out = c.must("get", "widgets.v1alpha1.example.com", "w")
	contains(t, out, "Warning: example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
}
