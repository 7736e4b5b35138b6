package printers

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"plainkube.dev/plainkube/internal/registry"
)

// now is the clock ages are measured against; tests replace it.
var now = time.Now

// specs maps each kind with a printer to its table; filled by the init
// functions of this package's files and read-only afterwards.
var specs = map[schema.GroupVersionKind]*registry.TableSpec{}

// For returns the table of gvk, or nil when this package has none for it (the
// caller then uses Default). Kinds that upstream prints with the default table
// (Role, ClusterRole, LimitRange, CSIStorageCapacity) return Default(). The returned spec is
// shared: do not modify it.
func For(gvk schema.GroupVersionKind) *registry.TableSpec {
	return specs[gvk]
}

// Kinds lists every kind For knows, sorted by group, version and kind.
func Kinds() []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(specs))
	for gvk := range specs {
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	return out
}

var defaultSpec = &registry.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Created At", Type: "date", Description: metaDoc["creationTimestamp"]},
	},
	Cells: func(obj runtime.Object) []interface{} {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
	},
}

// Default returns the table upstream uses for kinds without a printer: NAME
// and CREATED AT (an RFC 3339 date in UTC). Its Cells accept any object with
// metadata, typed or unstructured.
func Default() *registry.TableSpec {
	return defaultSpec
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// register adds the table of one kind; a kind registered twice is a bug.
func register(gvk schema.GroupVersionKind, columns []metav1.TableColumnDefinition, cells func(runtime.Object) []interface{}) {
	if _, dup := specs[gvk]; dup {
		panic("printers: kind registered twice: " + gvk.String())
	}
	specs[gvk] = &registry.TableSpec{Columns: columns, Cells: cells}
}

// typed adapts a printer of one Go type to TableSpec.Cells: objects of any
// other type, and nil pointers, give nil.
func typed[E any, P interface {
	*E
	runtime.Object
}](f func(P) []interface{}) func(runtime.Object) []interface{} {
	return func(obj runtime.Object) []interface{} {
		p, ok := obj.(P)
		if !ok || p == nil {
			return nil
		}
		return f(p)
	}
}

// row is shorthand for a cell list.
func row(cells ...interface{}) []interface{} { return cells }

// Column helpers.

var metaDoc = metav1.ObjectMeta{}.SwaggerDoc()

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metaDoc["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metaDoc["creationTimestamp"]}
}

func str(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "string", Description: description}
}

func integer(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "integer", Description: description}
}

func boolean(name, description string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: "boolean", Description: description}
}

// wide marks a column as shown only with -o wide.
func wide(c metav1.TableColumnDefinition) metav1.TableColumnDefinition {
	c.Priority = 1
	return c
}

const (
	containersDoc = "Names of each container in the template."
	imagesDoc     = "Images referenced by each container in the template."
)

// Cell helpers.

// age is how long ago t was, as kubectl shows it, or "<unknown>" when unset.
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}

func microAge(t metav1.MicroTime) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t.Time))
}

// orNone replaces an empty string with "<none>".
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// boolPtr prints an optional bool as upstream does.
func boolPtr(b *bool) string {
	switch {
	case b == nil:
		return "<unset>"
	case *b:
		return "True"
	default:
		return "False"
	}
}

// firstN joins up to max items with sep, adding " + N more..." for the rest.
// An empty list gives empty.
func firstN(items []string, max int, sep string) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return strings.Join(items[:max], sep) + " + " + strconv.Itoa(len(items)-max) + " more..."
}

// sortedSet returns the distinct non-empty strings of in, sorted.
func sortedSet(in []string) []string {
	seen := make(map[string]bool, len(in))
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
