package persistentvolume

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// bestMatch is the volume a claim without spec.volumeName binds to, as
// upstream's binder chooses it: among the volumes whose set of access
// modes holds the claim's, the groups with the fewest modes first, the
// first group's volume.FindMatchingVolume finds — the matching rule the
// scheduler's VolumeBinding plugin applies too: a volume pre-bound to the
// claim if there is one big enough, else (unless binding waits for the
// first consumer) the smallest Available, unclaimed volume of the claim's
// class, volume mode and volume attributes class that is big enough and
// matches the claim's selector. Volumes being deleted never match. Among
// equal volumes the first by name is taken, so that the choice is stable.
//
// Volumes claimed for another claim are dropped before anything else, as
// FindMatchingVolume would skip them: with many provisioned volumes (each
// pre-bound to its own claim) the sort and grouping then see only the
// few that can match.
func bestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool) (*corev1.PersistentVolume, error) {
	volumes = slices.DeleteFunc(slices.Clone(volumes), func(pv *corev1.PersistentVolume) bool {
		return pv.Spec.ClaimRef != nil && !volume.IsVolumeBoundToClaim(pv, claim)
	})
	slices.SortFunc(volumes, func(a, b *corev1.PersistentVolume) int { return strings.Compare(a.Name, b.Name) })
	groups := map[string][]*corev1.PersistentVolume{}
	modeCount := map[string]int{}
	for _, pv := range volumes {
		if !volume.CheckAccessModes(claim, pv) {
			continue
		}
		modes := distinctModes(pv.Spec.AccessModes)
		k := fmt.Sprint(modes)
		groups[k] = append(groups[k], pv)
		modeCount[k] = len(modes)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b string) int {
		return cmp.Or(cmp.Compare(modeCount[a], modeCount[b]), strings.Compare(a, b))
	})
	for _, k := range keys {
		if pv, err := volume.FindMatchingVolume(claim, groups[k], nil, nil, delayBinding, true); pv != nil || err != nil {
			return pv, err
		}
	}
	return nil, nil
}

// distinctModes are modes, each once, sorted.
func distinctModes(modes []corev1.PersistentVolumeAccessMode) []corev1.PersistentVolumeAccessMode {
	return slices.Compact(slices.Sorted(slices.Values(modes)))
}

// satisfies says why a volume a claim names in spec.volumeName cannot
// be bound to it ("" it can), in upstream's words.
func satisfies(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) string {
	requested, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Sprintf("the volume is marked for deletion %q", pv.Name)
	case capacity.Cmp(requested) < 0:
		return "requested PV is too small"
	case volume.GetPersistentVolumeClass(pv) != volume.GetPersistentVolumeClaimClass(claim):
		return "storageClassName does not match"
	case ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != ptr.Deref(claim.Spec.VolumeAttributesClassName, ""):
		return "volumeAttributesClassName does not match"
	case volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec):
		return "incompatible volumeMode"
	case !volume.CheckAccessModes(claim, pv):
		return "incompatible accessMode"
	}
	return ""
}
