package all

import (
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/printers"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/registry/admissionregistration"
	"plainkube.dev/plainkube/internal/registry/apiextensions"
	"plainkube.dev/plainkube/internal/registry/apiregistration"
	"plainkube.dev/plainkube/internal/registry/apps"
	"plainkube.dev/plainkube/internal/registry/autoscaling"
	"plainkube.dev/plainkube/internal/registry/batch"
	"plainkube.dev/plainkube/internal/registry/certificates"
	"plainkube.dev/plainkube/internal/registry/coordination"
	"plainkube.dev/plainkube/internal/registry/core"
	"plainkube.dev/plainkube/internal/registry/discovery"
	"plainkube.dev/plainkube/internal/registry/events"
	"plainkube.dev/plainkube/internal/registry/flowcontrol"
	"plainkube.dev/plainkube/internal/registry/metrics"
	"plainkube.dev/plainkube/internal/registry/networking"
	"plainkube.dev/plainkube/internal/registry/node"
	"plainkube.dev/plainkube/internal/registry/policy"
	"plainkube.dev/plainkube/internal/registry/rbac"
	resourceapi "plainkube.dev/plainkube/internal/registry/resource"
	"plainkube.dev/plainkube/internal/registry/reviews"
	"plainkube.dev/plainkube/internal/registry/scheduling"
	storageapi "plainkube.dev/plainkube/internal/registry/storage"
	"plainkube.dev/plainkube/internal/registry/storagemigration"
)

// Resources returns a fresh list of every built-in resource.
func Resources() []registry.Resource {
	var out []registry.Resource
	for _, group := range [][]registry.Resource{
		core.Resources(), apps.Resources(), batch.Resources(), autoscaling.Resources(),
		coordination.Resources(), discovery.Resources(), events.Resources(), networking.Resources(),
		policy.Resources(), rbac.Resources(), storageapi.Resources(), scheduling.Resources(),
		admissionregistration.Resources(), certificates.Resources(), reviews.Resources(),
		apiextensions.Resources(), apiregistration.Resources(), metrics.Resources(), node.Resources(), flowcontrol.Resources(),
		resourceapi.Resources(),
		storagemigration.Resources(),
	} {
		out = append(out, group...)
	}
	for i := range out {
		if out[i].Strategy.Table == nil && !out[i].Ephemeral {
			out[i].Strategy.Table = tableOf(&out[i])
		}
	}
	return out
}

// tableOf is the printer of r's kind; for a resource stored as another
// kind without a printer of its own, the stored kind's (autoscaling/v1
// HPAs print as v2's, as upstream prints both from one internal type).
func tableOf(r *registry.Resource) *registry.TableSpec {
	if t := printers.For(r.Kind); t != nil {
		return t
	}
	if sa := r.StoredAs; sa != nil {
		if t := printers.For(sa.Kind); t != nil {
			return &registry.TableSpec{Columns: t.Columns, Cells: func(obj runtime.Object) []interface{} { return t.Cells(sa.ToStorage(obj)) }}
		}
	}
	return printers.Default()
}
