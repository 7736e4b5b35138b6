package server

import (
	"context"
	"slices"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
)

// bootstrapSeed is what the first in-memory server of the process wrote
// at its start that depends on no option — the default RBAC policy, the
// APIServices of the built-in groups, API Priority and Fairness' default
// configuration — as it stored it. Later in-memory servers start with it
// in their store, so that their start finds those objects in place and
// writes nothing: those ~250 writes through the API were half the start
// of a test environment (pkg/testenv), which a test binary makes many of.
var bootstrapSeed struct {
	mu  sync.Mutex
	kvs map[string][]byte // nil until taken
}

// seedGroups are the API groups whose objects the seed holds.
var seedGroups = []string{rbacv1.GroupName, apiregistrationv1.GroupName, flowcontrolv1.GroupName}

// seedPrefixes are the storage prefixes of seedGroups' resources.
func seedPrefixes(resources []registry.Resource) []string {
	var out []string
	for _, res := range resources {
		if p := apiserver.StoragePrefix(res); slices.Contains(seedGroups, res.Kind.Group) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// plantSeed writes the seed, if one was taken, into st, an empty store
// not yet served.
func plantSeed(ctx context.Context, st storage.Interface) error {
	bootstrapSeed.mu.Lock()
	defer bootstrapSeed.mu.Unlock()
	for key, value := range bootstrapSeed.kvs {
		if _, err := st.Create(ctx, key, value); err != nil {
			return err
		}
	}
	return nil
}

// takeSeed keeps what st holds of seedGroups as the seed, unless one was
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
