// Package eventratelimit is upstream's EventRateLimit admission plugin
// (off by default; --enable-admission-plugins=EventRateLimit with its
// eventratelimit.admission.k8s.io/v1alpha1 Configuration given in the
// --admission-control-config-file). Creates and updates of core Events
// (not dry runs) are refused with 429 once a token bucket of a configured
// limit is empty: one bucket for the Server, or one per Namespace, User
// or SourceAndObject (the event's source and involved object), the last
// used ones kept in an LRU cache of cacheSize buckets.
package eventratelimit
