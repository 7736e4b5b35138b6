package persistentvolume

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"plainkube.dev/plainkube/internal/api/localpath"
)

// Annotations the binder reads and writes, as upstream's.
const (
	AnnBindCompleted          = "pv.kubernetes.io/bind-completed"
	AnnBoundByController      = "pv.kubernetes.io/bound-by-controller"
	AnnSelectedNode           = "volume.kubernetes.io/selected-node"
	AnnDynamicallyProvisioned = localpath.ProvisionedByAnnotation
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// annBetaStorageClass is the class before spec.storageClassName.
	annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

// claimClass is the class a claim asks for ("" none).
func claimClass(claim *corev1.PersistentVolumeClaim) string {
	if c, ok := claim.Annotations[annBetaStorageClass]; ok {
		return c
	}
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}

// volumeClass is a volume's class ("" none).
func volumeClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[annBetaStorageClass]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// boundToClaim: the volume's claimRef names the claim (and its UID, if
// the reference has one).
func boundToClaim(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace {
		return false
	}
	return ref.UID == "" || ref.UID == claim.UID
}

// volumeModeMismatch: the claim and the volume ask for different volume
// modes (unset means Filesystem).
func volumeModeMismatch(claim *corev1.PersistentVolumeClaimSpec, pv *corev1.PersistentVolumeSpec) bool {
	mode := func(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
		if m == nil {
			return corev1.PersistentVolumeFilesystem
		}
		return *m
	}
	return mode(claim.VolumeMode) != mode(pv.VolumeMode)
}

// hasAccessModes: every mode the claim asks for is among the volume's.
func hasAccessModes(volume, claim []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range claim {
		if !slices.Contains(volume, m) {
			return false
		}
	}
	return true
}

func storageOf(l corev1.ResourceList) int64 {
	q := l[corev1.ResourceStorage]
	return q.Value()
}

// bestMatch is the volume a claim without spec.volumeName binds to, as
// upstream's binder chooses it: a volume pre-bound to the claim if there is
// one big enough; else (unless binding waits for the first consumer) the
// smallest Available, unclaimed volume of the claim's class, volume mode
// and volume attributes class that is big enough and matches the claim's
// selector, among the volumes whose set of access modes holds the claim's
// and is the smallest such set that has a match. Volumes being deleted
// never match.
func bestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool) (*corev1.PersistentVolume, error) {
	var selector labels.Selector
	if claim.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("error creating internal label selector for claim: %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		selector = s
	}
	// Group the candidates by their set of access modes, fewest modes first.
	groups := map[string][]*corev1.PersistentVolume{}
	var keys []string
	for _, pv := range volumes {
		if !hasAccessModes(pv.Spec.AccessModes, claim.Spec.AccessModes) {
			continue
		}
		k := modesKey(pv.Spec.AccessModes)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pv)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if len(groups[keys[i]][0].Spec.AccessModes) != len(groups[keys[j]][0].Spec.AccessModes) {
			return len(groups[keys[i]][0].Spec.AccessModes) < len(groups[keys[j]][0].Spec.AccessModes)
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if pv := matchIn(claim, groups[k], selector, delayBinding); pv != nil {
			return pv, nil
		}
	}
	return nil, nil
}

func modesKey(modes []corev1.PersistentVolumeAccessMode) string {
	s := make([]string, 0, len(modes))
	for _, m := range modes {
		if !slices.Contains(s, string(m)) {
			s = append(s, string(m))
		}
	}
	slices.Sort(s)
	return fmt.Sprint(s)
}

func matchIn(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, selector labels.Selector, delayBinding bool) *corev1.PersistentVolume {
	requested := storageOf(claim.Spec.Resources.Requests)
	class := claimClass(claim)
	claimVAC := deref(claim.Spec.VolumeAttributesClassName)
	var smallest *corev1.PersistentVolume
	var smallestSize int64
	// Sorted by name, so that the choice among equal volumes is stable.
	volumes = slices.SortedFunc(slices.Values(volumes), func(a, b *corev1.PersistentVolume) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for _, pv := range volumes {
		if pv.Spec.ClaimRef != nil && !boundToClaim(pv, claim) {
			continue
		}
		size := storageOf(pv.Spec.Capacity)
		if size < requested || volumeModeMismatch(&claim.Spec, &pv.Spec) ||
			deref(pv.Spec.VolumeAttributesClassName) != claimVAC || pv.DeletionTimestamp != nil {
			continue
		}
		if boundToClaim(pv, claim) {
			return pv // pre-bound to this claim
		}
		if delayBinding {
			continue // the scheduler binds it
		}
		if pv.Status.Phase != corev1.VolumeAvailable ||
			(selector != nil && !selector.Matches(labels.Set(pv.Labels))) || volumeClass(pv) != class {
			continue
		}
		if smallest == nil || size < smallestSize {
			smallest, smallestSize = pv, size
		}
	}
	return smallest
}

// satisfies says why a volume a claim names in spec.volumeName cannot
// be bound to it ("" it can), in upstream's words.
func satisfies(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) string {
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Sprintf("the volume is marked for deletion %q", pv.Name)
	case storageOf(pv.Spec.Capacity) < storageOf(claim.Spec.Resources.Requests):
		return "requested PV is too small"
	case volumeClass(pv) != claimClass(claim):
		return "storageClassName does not match"
	case deref(pv.Spec.VolumeAttributesClassName) != deref(claim.Spec.VolumeAttributesClassName):
		return "volumeAttributesClassName does not match"
	case volumeModeMismatch(&claim.Spec, &pv.Spec):
		return "incompatible volumeMode"
	case !hasAccessModes(pv.Spec.AccessModes, claim.Spec.AccessModes):
		return "incompatible accessMode"
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
