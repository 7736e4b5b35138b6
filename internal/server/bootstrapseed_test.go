package server

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBootstrapSeed: an in-memory server after the process's first starts
// with the first one's default policy, APIServices and flow control
// objects (the same objects, by UID) and serves them as its own.
func TestBootstrapSeed(t *testing.T) {
	ctx := context.Background()
	uids := map[string]string{}
	for i := range 2 {
		_, cfg := startServerWith(t, Options{InMemory: true})
		cs := clientset(t, cfg)
		cr, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fs, err := cs.FlowcontrolV1().FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			uids["clusterrole"], uids["flowschema"] = string(cr.UID), string(fs.UID)
			continue
		}
		if string(cr.UID) != uids["clusterrole"] || string(fs.UID) != uids["flowschema"] {
			t.Errorf("the second server made its own cluster-admin (%s, first %s) or exempt flow schema (%s, first %s)",
				cr.UID, uids["clusterrole"], fs.UID, uids["flowschema"])
		}
		// What it serves from the seed, it can write as its own.
		cr.Labels = map[string]string{"seeded": "yes"}
		if _, err := cs.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
			t.Errorf("updating a seeded ClusterRole: %v", err)
		}
	}
	bootstrapSeed.mu.Lock()
	n := len(bootstrapSeed.kvs)
	bootstrapSeed.mu.Unlock()
	if n < 100 {
		t.Errorf("the seed holds %d objects; the default policy alone is more than 100", n)
	}
}
