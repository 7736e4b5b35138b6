package server

import (
	"context"
	"slices"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
)

// bootstrapSeed is what the first in-memory server of the process wrote
// at its start that depends on no option — the default RBAC policy, the
// APIServices of the built-in groups, API Priority and Fairness' default
// configuration, the system namespaces and priority classes — as it
// stored it. Later in-memory servers start with it in their store, so
// that their start finds those objects in place and writes nothing: those ~250 writes through the API were half the start
// of a test environment (pkg/testenv), which a test binary makes many of.
var bootstrapSeed struct {
	mu  sync.Mutex
	kvs map[string][]byte // nil until taken
}

// seeded says whether the seed holds res's objects: every resource of
// the RBAC, APIService and flow control groups, namespaces and priority
// classes (at the end of a start, only the system ones exist).
func seeded(res registry.Resource) bool {
	switch res.Kind.Group {
	case rbacv1.GroupName, apiregistrationv1.GroupName, flowcontrolv1.GroupName:
		return true
	case "":
		return res.Plural == "namespaces"
	case schedulingv1.GroupName:
		return res.Plural == "priorityclasses"
	}
	return false
}

// seedPrefixes are the storage prefixes of the resources seeded.
func seedPrefixes(resources []registry.Resource) []string {
	var out []string
	for _, res := range resources {
		if p := apiserver.StoragePrefix(res); seeded(res) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// plantSeed writes the seed, if one was taken, into st, an empty store
// not yet served, and reports whether it did.
func plantSeed(ctx context.Context, st storage.Interface) (bool, error) {
	bootstrapSeed.mu.Lock()
	defer bootstrapSeed.mu.Unlock()
	for key, value := range bootstrapSeed.kvs {
		if _, err := st.Create(ctx, key, value); err != nil {
			return false, err
		}
	}
	return bootstrapSeed.kvs != nil, nil
}

// takeSeed keeps what st holds of the seeded resources, unless a seed was
// taken already; called at the end of a start, before any component or
// client has written.
func takeSeed(ctx context.Context, st storage.Interface, resources []registry.Resource) error {
	bootstrapSeed.mu.Lock()
	defer bootstrapSeed.mu.Unlock()
	if bootstrapSeed.kvs != nil {
		return nil
	}
	kvs := map[string][]byte{}
	for _, prefix := range seedPrefixes(resources) {
		res, err := st.List(ctx, prefix, storage.ListOptions{})
		if err != nil {
			return err
		}
		for _, kv := range res.Items {
			kvs[kv.Key] = kv.Value
		}
	}
	bootstrapSeed.kvs = kvs
	return nil
}
