package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"plainkube.dev/plainkube/internal/auth"
)

// The impersonation headers (kubectl --as, --as-group, --as-uid).
const (
	impersonateUser        = "Impersonate-User"
	impersonateUID         = "Impersonate-Uid"
	impersonateGroup       = "Impersonate-Group"
	impersonateExtraPrefix = "Impersonate-Extra-"
	serviceAccountPrefix   = "system:serviceaccount:"
)

// impersonate is the user a request acts as: the one who sent it, or the
// one its Impersonate-* headers name, once the sender may impersonate each
// part of it (the impersonate verb on users or serviceaccounts, groups,
// uids and userextras/<key>), as upstream. The headers are removed.
func (s *Server) impersonate(ctx context.Context, r *http.Request, sender *auth.User) (*auth.User, error) {
	name := r.Header.Get(impersonateUser)
	uid := r.Header.Get(impersonateUID)
	groups := r.Header.Values(impersonateGroup)
	extra := map[string][]string{}
	for h, vs := range r.Header {
		if k, ok := strings.CutPrefix(h, impersonateExtraPrefix); ok {
			if unescaped, err := url.PathUnescape(k); err == nil {
				k = unescaped
			}
			extra[strings.ToLower(k)] = vs
		}
	}
	if name == "" && uid == "" && len(groups) == 0 && len(extra) == 0 {
		return sender, nil
	}
	for h := range r.Header {
		if h == impersonateUser || h == impersonateUID || h == impersonateGroup || strings.HasPrefix(h, impersonateExtraPrefix) {
			r.Header.Del(h)
		}
	}
	if name == "" {
		return nil, apierrors.NewBadRequest("requested impersonation of groups, extra or a uid without impersonating a user")
	}
	check := func(group, resource, sub, namespace, n string) error {
		a := auth.Attributes{User: sender, Verb: "impersonate", IsResource: true, APIGroup: group, Resource: resource,
			Subresource: sub, Namespace: namespace, Name: n}
		if d, reason, err := s.cfg.Authorizer.Authorize(ctx, a); err != nil || d != auth.Allow {
			return forbidden(a, reason)
		}
		return nil
	}
	u := &auth.User{Name: name, UID: uid}
	if sa, ok := strings.CutPrefix(name, serviceAccountPrefix); ok {
		ns, saName, found := strings.Cut(sa, ":")
		if !found || ns == "" || saName == "" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid service account name %q", name))
		}
		if err := check("", "serviceaccounts", "", ns, saName); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			groups = []string{auth.GroupServiceAccounts, auth.GroupServiceAccounts + ":" + ns}
		}
	} else if err := check("", "users", "", "", name); err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := check("", "groups", "", "", g); err != nil {
			return nil, err
		}
	}
	if uid != "" {
		if err := check("authentication.k8s.io", "uids", "", "", uid); err != nil {
			return nil, err
		}
	}
	for k, vs := range extra {
		for _, v := range vs {
			if err := check("authentication.k8s.io", "userextras", k, "", v); err != nil {
				return nil, err
			}
		}
	}
	// An impersonated user is authenticated (or, as system:anonymous,
	// unauthenticated) unless the groups asked say which.
	all := auth.GroupAuthenticated
	if name == auth.UserAnonymous {
		all = auth.GroupUnauthenticated
	}
	if !slices.Contains(groups, auth.GroupAuthenticated) && !slices.Contains(groups, auth.GroupUnauthenticated) {
		groups = append(groups, all)
	}
	u.Groups = groups
	if len(extra) > 0 {
		u.Extra = extra
	}
	return u, nil
}
