package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"plainkube.dev/plainkube/internal/auth"
)

// saPrefix starts the user name of every ServiceAccount token:
// system:serviceaccount:<namespace>:<name>.
const saPrefix = "system:serviceaccount:"

// appliesTo reports whether subject s of a binding in bindingNamespace
// ("" for a ClusterRoleBinding) names user u: by user name, by one of u's
// groups, or as a ServiceAccount (whose namespace defaults to the
// binding's).
func appliesTo(u *auth.User, s *rbacv1.Subject, bindingNamespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return u.InGroup(s.Name)
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return ns != "" && u.Name == saPrefix+ns+":"+s.Name
	}
	return false
}

// subjectKey is the index key of a subject: what a user is looked up by.
// A ServiceAccount subject without a namespace takes the binding's.
func subjectKey(s *rbacv1.Subject, bindingNamespace string) (string, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return "User:" + s.Name, true
	case rbacv1.GroupKind:
		return "Group:" + s.Name, true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return "", false
		}
		return "User:" + saPrefix + ns + ":" + s.Name, true
	}
	return "", false
}

// userKeys are the index keys a binding naming u can be found under.
func userKeys(u *auth.User) []string {
	keys := make([]string, 0, 1+len(u.Groups))
	keys = append(keys, "User:"+u.Name)
	for _, g := range u.Groups {
		keys = append(keys, "Group:"+g)
	}
	return keys
}
