package static

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const webManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: kube-system
  labels: {app: web}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: busybox:test
    command: ["sleep", "3600"]
`

func TestParseManifest(t *testing.T) {
	pod, err := parseManifest("/etc/m/web.yaml", []byte(webManifest), "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-node-1" || pod.Namespace != "kube-system" || pod.Spec.NodeName != "node-1" {
		t.Errorf("name %s/%s node %q", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	if len(pod.UID) != 32 || pod.Annotations[AnnotationConfigHash] != string(pod.UID) || pod.Annotations[AnnotationConfigSource] != "file" {
		t.Errorf("uid %q annotations %v", pod.UID, pod.Annotations)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways || pod.Spec.Containers[0].TerminationMessagePath == "" {
		t.Errorf("not defaulted: %+v", pod.Spec)
	}
	if n := len(pod.Spec.Tolerations); n != 1 || pod.Spec.Tolerations[0].Effect != corev1.TaintEffectNoExecute {
		t.Errorf("tolerations %v", pod.Spec.Tolerations)
	}
	if pod.Status.Phase != corev1.PodPending {
		t.Errorf("phase %q", pod.Status.Phase)
	}

	// The hash is stable, and changes with the spec, the node or the file.
	again, _ := parseManifest("/etc/m/web.yaml", []byte(webManifest), "node-1")
	if again.UID != pod.UID {
		t.Errorf("hash not stable: %s, %s", again.UID, pod.UID)
	}
	for _, c := range []struct{ path, data, node string }{
		{"/etc/m/web.yaml", strings.Replace(webManifest, "3600", "3601", 1), "node-1"},
		{"/etc/m/web.yaml", webManifest, "node-2"},
		{"/etc/m/other.yaml", webManifest, "node-1"},
	} {
		p, err := parseManifest(c.path, []byte(c.data), c.node)
		if err != nil || p.UID == pod.UID {
			t.Errorf("%s on %s: uid %v err %v, want a new hash", c.path, c.node, p, err)
		}
	}

	// JSON, and the default namespace.
	p, err := parseManifest("x.json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}`), "n")
	if err != nil || p.Namespace != "default" || p.Name != "j-n" {
		t.Errorf("json: %v %v", p, err)
	}

	for _, bad := range []string{
		"kind: Deployment\napiVersion: apps/v1\nmetadata: {name: d}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c, image: i}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: i}]}\n",
		"{not yaml",
	} {
		if _, err := parseManifest("f", []byte(bad), "n"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestStaticPodsScan(t *testing.T) {
	dir := t.TempDir()
	s := NewPods()
	now := time.Unix(1000, 0)
	var logged []string
	log := func(msg string, _ ...any) { logged = append(logged, msg) }
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := types.NamespacedName{Namespace: "kube-system", Name: "web-n"}

	write("web.yaml", webManifest)
	write(".hidden.yaml", strings.Replace(webManifest, "web", "hidden", 1))
	write("broken.yaml", "apiVersion: v1\nkind: Pod\n")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if changed := s.Scan(dir, "n", now, log); len(changed) != 1 || changed[0] != key {
		t.Fatalf("changed %v", changed)
	}
	if len(logged) != 1 {
		t.Errorf("logged %v, want the broken file once", logged)
	}
	cur, stopping := s.Get(key)
	if cur == nil || len(stopping) != 0 || cur.Annotations[AnnotationConfigSeen] != "1970-01-01T00:16:40Z" {
		t.Fatalf("cur %v stopping %v", cur, stopping)
	}
	first := cur.UID

	// Unchanged: nothing to do, the broken file is not parsed again.
	if changed := s.Scan(dir, "n", now.Add(time.Second), log); len(changed) != 0 || len(logged) != 1 {
		t.Errorf("changed %v logged %v", changed, logged)
	}

	// Edited: a new version; the old one is to stop, with its grace period.
	write("web.yaml", strings.Replace(webManifest, "3600", "60", 1)+"  terminationGracePeriodSeconds: 3\n")
	if changed := s.Scan(dir, "n", now.Add(2*time.Second), log); len(changed) != 2 {
		t.Errorf("changed %v, want the key twice (old stopping, new current)", changed)
	}
	cur, stopping = s.Get(key)
	if cur.UID == first || len(stopping) != 1 || stopping[0].UID != first || stopping[0].DeletionTimestamp == nil || *stopping[0].DeletionGracePeriodSeconds != corev1.DefaultTerminationGracePeriodSeconds {
		t.Fatalf("after edit: cur %s stopping %v", cur.UID, stopping)
	}
	uids := s.UIDs()
	if len(uids) != 2 {
		t.Errorf("uids %v", uids)
	}
	s.Stopped(key, first)

	// Removed: stopping with its own grace period, nothing current.
	second := cur.UID
	os.Remove(filepath.Join(dir, "web.yaml"))
	s.Scan(dir, "n", now.Add(3*time.Second), log)
	cur, stopping = s.Get(key)
	if cur != nil || len(stopping) != 1 || stopping[0].UID != second || *stopping[0].DeletionGracePeriodSeconds != 3 {
		t.Fatalf("after removal: cur %v stopping %v", cur, stopping)
	}
	if keys := s.Keys(); len(keys) != 1 || keys[0] != key {
		t.Errorf("keys %v", keys)
	}
	s.Stopped(key, second)
	if keys := s.Keys(); len(keys) != 0 {
		t.Errorf("keys %v", keys)
	}
}
