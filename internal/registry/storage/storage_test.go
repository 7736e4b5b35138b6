package storageapi

import (
	"fmt"
	"strings"
	"testing"

	"plainkube.dev/plainkube/internal/registry/registrytest"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/registry"
)

// TestDiscoveryNames: names, scopes and subresources as upstream's
// discovery lists them.
func TestDiscoveryNames(t *testing.T) {
	want := map[string]string{
		"storageclasses":          "storageclass sc cluster",
		"csidrivers":              "csidriver  cluster",
		"csinodes":                "csinode  cluster status",
		"csistoragecapacities":    "csistoragecapacity  namespaced",
		"volumeattachments":       "volumeattachment  cluster status",
		"volumeattributesclasses": "volumeattributesclass vac cluster",
	}
	for _, r := range Resources() {
		scope := "cluster"
		if r.Namespaced {
			scope = "namespaced"
		}
		got := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", r.Singular, strings.Join(r.ShortNames, ","), scope, strings.Join(r.Subresources, ",")))
		if got != want[r.Plural] {
			t.Errorf("%s: %q, want %q", r.Plural, got, want[r.Plural])
		}
		delete(want, r.Plural)
	}
	if len(want) > 0 {
		t.Errorf("missing: %v", want)
	}
}

func TestCSIDriverRules(t *testing.T) {
	r := resource(t, "csidrivers")
	d := &storagev1.CSIDriver{}
	r.Strategy.Default(d)
	expectErrors(t, "defaulted", r.Strategy.Validate(d))

	bare := &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{ServiceAccountTokenInSecrets: ptr.To(true),
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Sometimes"}, NodeAllocatableUpdatePeriodSeconds: ptr.To(int64(5)),
		TokenRequests: nil}}
	expectErrors(t, "not defaulted", r.Strategy.Validate(bare),
		"spec.attachedRequired: Required value",
		"spec.podInfoOnMount: Required value",
		"spec.storageCapacity: Required value",
		`spec.volumeLifecycleModes: Unsupported value: "Sometimes": supported values: "Persistent", "Ephemeral"`,
		"spec.seLinuxMount: Required value",
		"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
		"spec.serviceAccountTokenInSecrets: Invalid value: true: serviceAccountTokenInSecrets is set but no tokenRequests are specified",
		"spec.preventPodSchedulingIfMissing: Required value",
	)
	d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}, {Audience: "a"}, {Audience: "b", ExpirationSeconds: ptr.To(int64(1<<32 + 1))}}
	expectErrors(t, "token requests", r.Strategy.Validate(d),
		`spec.tokenRequests[1].audience: Duplicate value: "a"`,
		"spec.tokenRequests[2].expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds")

	old := d.DeepCopy()
	d.Spec.VolumeLifecycleModes = append(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
	expectErrors(t, "modes changed", r.Strategy.ValidateUpdate(d, old), "spec.volumeLifecycleModes: Invalid value")
}

func TestStorageClassUpdate(t *testing.T) {
	r := resource(t, "storageclasses")
	old := &storagev1.StorageClass{Provisioner: "a.example.com", Parameters: map[string]string{"k": "v"}}
	r.Strategy.Default(old)
	sc := old.DeepCopy()
	sc.Provisioner = "b.example.com"
	sc.Parameters = nil
	expectErrors(t, "update", r.Strategy.ValidateUpdate(sc, old),
		"parameters: Invalid value: null: field is immutable",
		`provisioner: Invalid value: "b.example.com": field is immutable`)
}

func TestVolumeAttachmentRules(t *testing.T) {
	r := resource(t, "volumeattachments")
	va := &storagev1.VolumeAttachment{Spec: storagev1.VolumeAttachmentSpec{Attacher: "Bad_Name", NodeName: "n",
		Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("")}}}
	expectErrors(t, "bad", r.Strategy.Validate(va),
		`spec.attacher: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`,
		"spec.source.persistentVolumeName: Required value: must specify non empty persistentVolumeName",
		`spec.source.persistentVolumeName: Invalid value: "": a lowercase RFC 1123 subdomain`)
}

func TestCSIStorageCapacityRules(t *testing.T) {
	r := resource(t, "csistoragecapacities")
	c := &storagev1.CSIStorageCapacity{StorageClassName: "Bad"}
	expectErrors(t, "bad class", r.Strategy.Validate(c), `storageClassName: Invalid value: "Bad": a lowercase RFC 1123 subdomain`)
}

func resource(t *testing.T, plural string) registry.Resource {
	t.Helper()
	return registrytest.Named(t, Resources(), plural)
}

func expectErrors(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	registrytest.ExpectErrorPrefixes(t, what, errs, want...)
}
