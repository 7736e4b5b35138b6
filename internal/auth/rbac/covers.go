package rbac

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Covers reports whether the owner's rules grant everything the wanted
// rules grant, and if not which pieces they do not: escalation prevention
// lets a user create or bind a role only when the rules they hold cover
// the role's. Each wanted rule is broken into pieces of one verb, group,
// resource and name (or one verb and URL), and each piece must fall under
// one owner rule.
func Covers(owner, wanted []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, w := range wanted {
		for _, piece := range breakDown(w) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(&o, &piece) }) {
				missing = append(missing, piece)
			}
		}
	}
	return len(missing) == 0, missing
}

// breakDown splits r into rules of one verb and one group, resource and
// name each (one verb and one URL each for non-resource rules).
func breakDown(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, verb := range r.Verbs {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{g}, Resources: []string{res}})
				}
				for _, n := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{g}, Resources: []string{res}, ResourceNames: []string{n}})
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			out = append(out, rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{u}})
		}
	}
	return out
}

// ruleCovers reports whether owner grants all that piece (one verb, group,
// resource and name, or one verb and URL) grants.
func ruleCovers(owner, piece *rbacv1.PolicyRule) bool {
	if !coversAll(owner.Verbs, piece.Verbs, rbacv1.VerbAll) || !coversAll(owner.APIGroups, piece.APIGroups, rbacv1.APIGroupAll) {
		return false
	}
	for _, u := range piece.NonResourceURLs {
		if !slices.ContainsFunc(owner.NonResourceURLs, func(o string) bool { return urlCovers(o, u) }) {
			return false
		}
	}
	for _, res := range piece.Resources {
		if !resourceCovers(owner.Resources, res) {
			return false
		}
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	return len(piece.ResourceNames) > 0 && coversAll(owner.ResourceNames, piece.ResourceNames, "")
}

func coversAll(have, want []string, all string) bool {
	if all != "" && slices.Contains(have, all) {
		return true
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// resourceCovers: "*" covers everything, an exact entry itself, and "*/sub"
// the subresource sub of every resource.
func resourceCovers(have []string, res string) bool {
	if slices.Contains(have, rbacv1.ResourceAll) || slices.Contains(have, res) {
		return true
	}
	_, sub, ok := strings.Cut(res, "/")
	return ok && slices.Contains(have, "*/"+sub)
}

// urlCovers: "*" covers every URL, "/apis/*" everything under /apis/ (and
// "/apis/*" itself), anything else only itself.
func urlCovers(have, want string) bool {
	if have == rbacv1.NonResourceAll || have == want {
		return true
	}
	return strings.HasSuffix(have, "*") && strings.HasPrefix(want, strings.TrimSuffix(have, "*"))
}
