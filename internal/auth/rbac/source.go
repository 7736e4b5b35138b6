package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// bySubject is the name of the binding informers' index from subject key
// (a ClusterRoleBinding's) or namespace + "|" + subject key (a
// RoleBinding's) to the bindings naming that subject.
const bySubject = "rbac-subject"

// InformerSource reads roles and bindings from client-go informers, the
// bindings through an index by subject.
type InformerSource struct {
	crbs         cache.Indexer
	rbs          cache.Indexer
	clusterRoles rbaclisters.ClusterRoleLister
	roles        rbaclisters.RoleLister
	synced       []cache.InformerSynced
}

// NewInformerSource adds the subject index to the binding informers of f
// (before they start) and reads from them.
func NewInformerSource(f rbacinformers.Interface) (*InformerSource, error) {
	crbInf, rbInf := f.ClusterRoleBindings().Informer(), f.RoleBindings().Informer()
	if err := crbInf.AddIndexers(cache.Indexers{bySubject: clusterRoleBindingKeys}); err != nil {
		return nil, err
	}
	if err := rbInf.AddIndexers(cache.Indexers{bySubject: roleBindingKeys}); err != nil {
		return nil, err
	}
	crInf, rInf := f.ClusterRoles(), f.Roles()
	return &InformerSource{
		crbs: crbInf.GetIndexer(), rbs: rbInf.GetIndexer(),
		clusterRoles: crInf.Lister(), roles: rInf.Lister(),
		synced: []cache.InformerSynced{crbInf.HasSynced, rbInf.HasSynced, crInf.Informer().HasSynced, rInf.Informer().HasSynced},
	}, nil
}

// HasSynced reports whether every informer has its first list.
func (s *InformerSource) HasSynced() bool {
	for _, f := range s.synced {
		if !f() {
			return false
		}
	}
	return true
}

func clusterRoleBindingKeys(obj any) ([]string, error) {
	b, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return nil, nil
	}
	return subjectKeys(b.Subjects, "", ""), nil
}

func roleBindingKeys(obj any) ([]string, error) {
	b, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return nil, nil
	}
	return subjectKeys(b.Subjects, b.Namespace, b.Namespace+"|"), nil
}

func subjectKeys(subjects []rbacv1.Subject, bindingNamespace, prefix string) []string {
	keys := make([]string, 0, len(subjects))
	for i := range subjects {
		if k, ok := subjectKey(&subjects[i], bindingNamespace); ok {
			keys = append(keys, prefix+k)
		}
	}
	return keys
}

func (s *InformerSource) ClusterRoleBindings(keys []string) []*rbacv1.ClusterRoleBinding {
	return lookup[*rbacv1.ClusterRoleBinding](s.crbs, "", keys)
}

func (s *InformerSource) RoleBindings(namespace string, keys []string) []*rbacv1.RoleBinding {
	return lookup[*rbacv1.RoleBinding](s.rbs, namespace+"|", keys)
}

func (s *InformerSource) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	return s.clusterRoles.Get(name)
}

func (s *InformerSource) Role(namespace, name string) (*rbacv1.Role, error) {
	return s.roles.Roles(namespace).Get(name)
}

// lookup is every object indexed under prefix+key for one of keys, once.
func lookup[T comparable](idx cache.Indexer, prefix string, keys []string) []T {
	var out []T
	seen := map[T]bool{}
	for _, k := range keys {
		objs, err := idx.ByIndex(bySubject, prefix+k)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if t, ok := o.(T); ok && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}
