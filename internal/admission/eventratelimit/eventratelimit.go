package eventratelimit

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/lru"
	"sigs.k8s.io/yaml"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "EventRateLimit"

// ConfigAPIVersion is the version of Configuration read.
const ConfigAPIVersion = "eventratelimit.admission.k8s.io/v1alpha1"

// LimitType is what a limit is counted by.
type LimitType string

// The limit types, as upstream's.
const (
	Server          LimitType = "Server"
	Namespace       LimitType = "Namespace"
	User            LimitType = "User"
	SourceAndObject LimitType = "SourceAndObject"
)

// Configuration is upstream's eventratelimit.admission.k8s.io/v1alpha1
// Configuration.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`
	Limits          []Limit `json:"limits"`
}

// Limit is one token bucket (or one per key).
type Limit struct {
	Type      LimitType `json:"type"`
	QPS       int32     `json:"qps"`
	Burst     int32     `json:"burst"`
	CacheSize int32     `json:"cacheSize,omitempty"`
}

// defaultCacheSize is upstream's number of buckets kept per limit.
const defaultCacheSize = 4096

// ParseConfiguration reads a Configuration (YAML or JSON; nil: an empty
// one) and validates it as upstream does.
func ParseConfiguration(data []byte) (*Configuration, error) {
	cfg := &Configuration{}
	if data != nil {
		if err := yaml.UnmarshalStrict(data, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		if cfg.APIVersion != ConfigAPIVersion || cfg.Kind != "Configuration" {
			return nil, fmt.Errorf("%s: the configuration must be apiVersion %s, kind Configuration, not %s %s", Name, ConfigAPIVersion, cfg.APIVersion, cfg.Kind)
		}
	}
	if err := validate(cfg).ToAggregate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return cfg, nil
}

func validate(cfg *Configuration) field.ErrorList {
	var errs field.ErrorList
	limitsPath := field.NewPath("limits")
	if len(cfg.Limits) == 0 {
		errs = append(errs, field.Invalid(limitsPath, cfg.Limits, "must not be empty"))
	}
	for i, l := range cfg.Limits {
		p := limitsPath.Index(i)
		switch l.Type {
		case Server, Namespace, User, SourceAndObject:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), l.Type, []LimitType{Server, Namespace, User, SourceAndObject}))
		}
		if l.Burst <= 0 {
			errs = append(errs, field.Invalid(p.Child("burst"), l.Burst, "must be positive"))
		}
		if l.QPS <= 0 {
			errs = append(errs, field.Invalid(p.Child("qps"), l.QPS, "must be positive"))
		}
		if l.Type != Server && l.CacheSize < 0 {
			errs = append(errs, field.Invalid(p.Child("cacheSize"), l.CacheSize, "must not be negative"))
		}
	}
	return errs
}

// New is the plugin enforcing cfg's limits (a parsed Configuration).
func New(cfg *Configuration) admission.Plugin {
	var enforcers []*enforcer
	for _, l := range cfg.Limits {
		enforcers = append(enforcers, newEnforcer(l))
	}
	return admission.Plugin{Name: Name, Operations: []admission.Operation{admission.Create, admission.Update},
		Validate: func(_ context.Context, a *admission.Attributes) error {
			if a.Kind.Group != "" || a.Kind.Kind != "Event" || a.DryRun {
				return nil
			}
			var errs []error
			for _, e := range enforcers {
				if err := e.accept(a); err != nil {
					errs = append(errs, err)
				}
			}
			if err := utilerrors.NewAggregate(errs); err != nil {
				return apierrors.NewTooManyRequestsError(err.Error())
			}
			return nil
		}}
}

// enforcer is one limit: its buckets by key.
type enforcer struct {
	limit   Limit
	mu      sync.Mutex
	single  flowcontrol.RateLimiter
	buckets *lru.Cache
}

func newEnforcer(l Limit) *enforcer {
	e := &enforcer{limit: l}
	if l.Type == Server {
		e.single = e.newBucket()
		return e
	}
	size := int(l.CacheSize)
	if size == 0 {
		size = defaultCacheSize
	}
	e.buckets = lru.New(size)
	return e
}

func (e *enforcer) newBucket() flowcontrol.RateLimiter {
	return flowcontrol.NewTokenBucketRateLimiter(float32(e.limit.QPS), int(e.limit.Burst))
}

// bucket is key's bucket, made if it is not (or no longer) cached.
func (e *enforcer) bucket(key string) flowcontrol.RateLimiter {
	if e.single != nil {
		return e.single
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.buckets.Get(key); ok {
		return b.(flowcontrol.RateLimiter)
	}
	b := e.newBucket()
	e.buckets.Add(key, b)
	return b
}

func (e *enforcer) accept(a *admission.Attributes) error {
	key := e.key(a)
	if !e.bucket(key).TryAccept() {
		return fmt.Errorf("limit reached on type %v for key %v", e.limit.Type, key)
	}
	return nil
}

// key is what the request counts under.
func (e *enforcer) key(a *admission.Attributes) string {
	switch e.limit.Type {
	case Namespace:
		return a.Namespace
	case User:
		if a.User == nil {
			return ""
		}
		return a.User.Name
	case SourceAndObject:
		ev, ok := a.Object.(*corev1.Event)
		if !ok {
			return ""
		}
		o := ev.InvolvedObject
		return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion}, "")
	}
	return ""
}
