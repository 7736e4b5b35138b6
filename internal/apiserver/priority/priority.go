package priority

import (
	"cmp"
	"math"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
)

// Request is what of a request classification looks at.
type Request struct {
	User   string
	Groups []string
	// Verb is the API verb (get, list, create, …) of a resource request,
	// the lower-case HTTP method of another.
	Verb                   string
	IsResource             bool
	APIGroup, Resource     string
	Subresource, Namespace string
	// Path is a non-resource request's URL path.
	Path string
}

// Level is a priority level as the server serves it.
type Level struct {
	Name string
	UID  types.UID
	// Exempt levels are never limited; the others have Seats.
	Exempt bool
	Seats  int
	// Reject: a request that finds no free seat is refused at once;
	// otherwise it waits in its flow's queue of at most QueueLength.
	Reject      bool
	QueueLength int
}

// Match is a request's classification.
type Match struct {
	Schema *flowcontrolv1.FlowSchema
	Level  *Level
	// Flow names the request's flow: its schema and distinguisher.
	Flow string
}

// Config is a classification of requests: schemas in the order they are
// tried, levels by name.
type Config struct {
	schemas []*flowcontrolv1.FlowSchema
	levels  map[string]*Level
}

// New makes the configuration of schemas and levels for a server whose
// concurrency limit is serverSeats. Schemas whose level does not exist
// are left out (they are dangling), as upstream's.
func New(schemas []*flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration, serverSeats int) *Config {
	c := &Config{levels: map[string]*Level{}}
	shares := 0
	for _, pl := range levels {
		if pl.Spec.Limited != nil {
			shares += int(nominalShares(pl))
		}
	}
	for _, pl := range levels {
		lv := &Level{Name: pl.Name, UID: pl.UID, Exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt}
		if l := pl.Spec.Limited; l != nil && !lv.Exempt {
			if shares > 0 {
				lv.Seats = max(1, int(math.Ceil(float64(serverSeats)*float64(nominalShares(pl))/float64(shares))))
			}
			lv.Reject = l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeReject
			lv.QueueLength = 50
			if q := l.LimitResponse.Queuing; q != nil && q.QueueLengthLimit > 0 {
				lv.QueueLength = int(q.QueueLengthLimit)
			}
		}
		c.levels[pl.Name] = lv
	}
	for _, fs := range schemas {
		if c.levels[fs.Spec.PriorityLevelConfiguration.Name] != nil {
			c.schemas = append(c.schemas, fs)
		}
	}
	slices.SortStableFunc(c.schemas, func(a, b *flowcontrolv1.FlowSchema) int {
		return cmp.Or(cmp.Compare(a.Spec.MatchingPrecedence, b.Spec.MatchingPrecedence), strings.Compare(a.Name, b.Name))
	})
	return c
}

// nominalShares is a limited level's nominalConcurrencyShares (30 unset,
// the API's default).
func nominalShares(pl *flowcontrolv1.PriorityLevelConfiguration) int32 {
	if s := pl.Spec.Limited.NominalConcurrencyShares; s != nil {
		return *s
	}
	return 30
}

// Bootstrap is upstream's bootstrap configuration (mandatory and
// suggested objects), what the server classifies by until it has read the
// stored objects.
func Bootstrap(serverSeats int) *Config {
	return New(slices.Concat(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas),
		slices.Concat(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations), serverSeats)
}

// Levels are the configuration's levels.
func (c *Config) Levels() map[string]*Level { return c.levels }

// Classify finds the first schema that matches r. A request no schema
// matches (a configuration without upstream's mandatory catch-all) is
// served at no level: ok is false.
func (c *Config) Classify(r Request) (m Match, ok bool) {
	for _, fs := range c.schemas {
		if matchesSchema(fs, r) {
			return Match{Schema: fs, Level: c.levels[fs.Spec.PriorityLevelConfiguration.Name], Flow: fs.Name + "/" + distinguisher(fs, r)}, true
		}
	}
	return Match{}, false
}

// distinguisher is the part of r that tells its flows apart in fs.
func distinguisher(fs *flowcontrolv1.FlowSchema, r Request) string {
	if d := fs.Spec.DistinguisherMethod; d != nil {
		switch d.Type {
		case flowcontrolv1.FlowDistinguisherMethodByUserType:
			return r.User
		case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
			return r.Namespace
		}
	}
	return ""
}

func matchesSchema(fs *flowcontrolv1.FlowSchema, r Request) bool {
	for _, rule := range fs.Spec.Rules {
		if !slices.ContainsFunc(rule.Subjects, func(s flowcontrolv1.Subject) bool { return matchesSubject(s, r) }) {
			continue
		}
		if r.IsResource && slices.ContainsFunc(rule.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return matchesResource(rr, r) }) {
			return true
		}
		if !r.IsResource && slices.ContainsFunc(rule.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return matchesNonResource(nr, r) }) {
			return true
		}
	}
	return false
}

func matchesSubject(s flowcontrolv1.Subject, r Request) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == r.User)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == flowcontrolv1.NameAll || slices.Contains(r.Groups, s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		sa := s.ServiceAccount
		if sa == nil {
			return false
		}
		ns, name, ok := strings.Cut(strings.TrimPrefix(r.User, "system:serviceaccount:"), ":")
		return ok && strings.HasPrefix(r.User, "system:serviceaccount:") &&
			(sa.Namespace == flowcontrolv1.NamespaceEvery || sa.Namespace == ns) && (sa.Name == flowcontrolv1.NameAll || sa.Name == name)
	}
	return false
}

// holds reports whether list holds want or the wildcard.
func holds(list []string, wildcard, want string) bool {
	return slices.Contains(list, wildcard) || slices.Contains(list, want)
}

func matchesResource(rr flowcontrolv1.ResourcePolicyRule, r Request) bool {
	resource := r.Resource
	if r.Subresource != "" {
		resource += "/" + r.Subresource
	}
	if !holds(rr.Verbs, flowcontrolv1.VerbAll, r.Verb) || !holds(rr.APIGroups, flowcontrolv1.APIGroupAll, r.APIGroup) ||
		!holds(rr.Resources, flowcontrolv1.ResourceAll, resource) {
		return false
	}
	if r.Namespace == "" {
		return rr.ClusterScope
	}
	return holds(rr.Namespaces, flowcontrolv1.NamespaceEvery, r.Namespace)
}

func matchesNonResource(nr flowcontrolv1.NonResourcePolicyRule, r Request) bool {
	if !holds(nr.Verbs, flowcontrolv1.VerbAll, r.Verb) {
		return false
	}
	for _, u := range nr.NonResourceURLs {
		if u == flowcontrolv1.NonResourceAll || u == r.Path ||
			(strings.HasSuffix(u, "*") && strings.HasPrefix(r.Path, strings.TrimSuffix(u, "*"))) {
			return true
		}
	}
	return false
}

// Dangling reports whether fs names a level that levels lack.
func Dangling(fs *flowcontrolv1.FlowSchema, levels []*flowcontrolv1.PriorityLevelConfiguration) bool {
	return !slices.ContainsFunc(levels, func(pl *flowcontrolv1.PriorityLevelConfiguration) bool {
		return pl.Name == fs.Spec.PriorityLevelConfiguration.Name
	})
}
