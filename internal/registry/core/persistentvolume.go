package core

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/registry"
)

// now stamps lastPhaseTransitionTime; tests replace it.
var now = func() metav1.Time { return metav1.NewTime(time.Now().UTC().Truncate(time.Second)) }

func persistentVolumes() registry.Resource {
	return registry.Resource{
		Kind:                corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
		Plural:              "persistentvolumes",
		ReturnDeletedObject: true,
		Singular:            "persistentvolume",
		ShortNames:          []string{"pv"},
		Namespaced:          false,
		Subresources:        []string{"status"},
		Strategy: registry.Strategy{
			Default: func(obj runtime.Object) { defaultPersistentVolume(obj.(*corev1.PersistentVolume)) },
			PrepareForCreate: func(_ context.Context, obj runtime.Object) {
				pv := obj.(*corev1.PersistentVolume)
				t := now()
				pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &t}
			},
			Validate: validated(func(obj runtime.Object) field.ErrorList {
				pv := obj.(*corev1.PersistentVolume)
				return validatePersistentVolumeSpec(&pv.Spec, pv.Name, false, field.NewPath("spec"))
			}),
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validatePersistentVolumeUpdate(obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume))
			},
			ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
				// Upstream's status strategy stamps the phase change time;
				// with no status-prepare hook, it is done here.
				pv, o := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
				if pv.Status.Phase != o.Status.Phase && equality.Semantic.DeepEqual(pv.Status.LastPhaseTransitionTime, o.Status.LastPhaseTransitionTime) {
					t := now()
					pv.Status.LastPhaseTransitionTime = &t
				}
				return nil
			},
			SelectableFields: func(obj runtime.Object) fields.Set {
				// upstream keeps this unqualified field for compatibility
				return fields.Set{"name": obj.(*corev1.PersistentVolume).Name}
			},
		},
	}
}

func defaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	podspec.RoundUpResourceList(pv.Spec.Capacity)
	src := &pv.Spec.PersistentVolumeSource
	if src.HostPath != nil {
		podspec.DefaultHostPath(src.HostPath)
	}
	if src.RBD != nil {
		podspec.DefaultRBD(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if src.AzureDisk != nil {
		podspec.DefaultAzureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		podspec.DefaultScaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
}

// ValidateInlinePersistentVolumeSpec checks a PersistentVolumeSpec given
// inline (a VolumeAttachment's source.inlineVolumeSpec) with upstream's
// rules for one: a CSI volume without capacity, claim or node affinity.
func ValidateInlinePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	return validatePersistentVolumeSpec(spec, "", true, fldPath)
}

func validatePersistentVolumeSpec(spec *corev1.PersistentVolumeSpec, pvName string, inline bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if inline {
		if spec.ClaimRef != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("claimRef"), "may not be specified in the context of inline volumes"))
		}
		if len(spec.Capacity) != 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("capacity"), "may not be specified in the context of inline volumes"))
		}
		if spec.CSI == nil {
			errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified in the context of inline volumes"))
		}
	}
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), ""))
	}
	errs = append(errs, podspec.ValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)

	if !inline {
		capPath := fldPath.Child("capacity")
		if len(spec.Capacity) == 0 {
			errs = append(errs, field.Required(capPath, ""))
		}
		if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
			errs = append(errs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
		}
		for r, q := range spec.Capacity {
			if q.Value() < 0 {
				errs = append(errs, field.Invalid(capPath.Key(string(r)), q.Value(), "must be a valid resource quantity"))
			}
			errs = append(errs, podspec.ValidatePositiveQuantityValue(q, capPath.Key(string(r)))...)
		}
	}
	if p := spec.PersistentVolumeReclaimPolicy; p != "" {
		valid := []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain}
		switch {
		case inline && p != corev1.PersistentVolumeReclaimRetain:
			errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may only be "+string(corev1.PersistentVolumeReclaimRetain)+" in the context of inline volumes"))
		case !inline && !contains(valid, p):
			errs = append(errs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), p, valid))
		}
	}
	nodeAffinitySet := false
	if na := spec.NodeAffinity; na != nil {
		switch {
		case inline:
			errs = append(errs, field.Forbidden(fldPath.Child("nodeAffinity"), "may not be specified in the context of inline volumes"))
		case na.Required != nil:
			nodeAffinitySet = true
			errs = append(errs, podspec.ValidateNodeSelector(na.Required, false, fldPath.Child("nodeAffinity", "required"))...)
		default:
			nodeAffinitySet = true
			errs = append(errs, field.Required(fldPath.Child("nodeAffinity", "required"), "must specify required node constraints"))
		}
	}
	errs = append(errs, validatePersistentVolumeSource(&spec.PersistentVolumeSource, pvName, nodeAffinitySet, fldPath)...)
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, validateNameWith(apivalidation.NameIsDNSSubdomain, spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !contains(podspec.SupportedVolumeModes, *spec.VolumeMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, podspec.SupportedVolumeModes))
	}
	if vac := spec.VolumeAttributesClassName; vac != nil {
		if *vac == "" {
			errs = append(errs, field.Required(fldPath.Child("volumeAttributesClassName"), "an empty string is disallowed"))
		} else {
			errs = append(errs, validateNameWith(apivalidation.NameIsDNSSubdomain, *vac, fldPath.Child("volumeAttributesClassName"))...)
		}
		if spec.CSI == nil {
			errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return errs
}

// validatePersistentVolumeSource checks that exactly one source is set and
// that it carries its required fields.
func validatePersistentVolumeSource(s *corev1.PersistentVolumeSource, pvName string, nodeAffinitySet bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(set bool, name string, fn func() field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
			return
		}
		n++
		errs = append(errs, fn()...)
	}
	req := func(p *field.Path, pairs ...string) field.ErrorList {
		var e field.ErrorList
		for i := 0; i+1 < len(pairs); i += 2 {
			if pairs[i+1] == "" {
				e = append(e, field.Required(p.Child(pairs[i]), ""))
			}
		}
		return e
	}
	partition := func(p *field.Path, v int32) field.ErrorList {
		if v < 0 || v > 255 {
			return field.ErrorList{field.Invalid(p.Child("partition"), v, "must be between 1 and 255, inclusive")}
		}
		return nil
	}
	secretRef := func(p *field.Path, ref *corev1.SecretReference) field.ErrorList {
		var e field.ErrorList
		if ref.Name == "" {
			e = append(e, field.Required(p.Child("name"), ""))
		} else {
			e = append(e, validateDNS1123Subdomain(ref.Name, p.Child("name"))...)
		}
		if ref.Namespace == "" {
			e = append(e, field.Required(p.Child("namespace"), ""))
		} else {
			e = append(e, validateDNS1123Label(ref.Namespace, p.Child("namespace"))...)
		}
		return e
	}
	one(s.HostPath != nil, "hostPath", func() field.ErrorList {
		return podspec.ValidateHostPathVolumeSource(s.HostPath, fldPath.Child("hostPath"))
	})
	one(s.GCEPersistentDisk != nil, "gcePersistentDisk", func() field.ErrorList {
		p := fldPath.Child("persistentDisk")
		return append(req(p, "pdName", s.GCEPersistentDisk.PDName), partition(p, s.GCEPersistentDisk.Partition)...)
	})
	one(s.AWSElasticBlockStore != nil, "awsElasticBlockStore", func() field.ErrorList {
		p := fldPath.Child("awsElasticBlockStore")
		return append(req(p, "volumeID", s.AWSElasticBlockStore.VolumeID), partition(p, s.AWSElasticBlockStore.Partition)...)
	})
	one(s.Glusterfs != nil, "glusterfs", func() field.ErrorList {
		p := fldPath.Child("glusterfs")
		e := req(p, "endpoints", s.Glusterfs.EndpointsName, "path", s.Glusterfs.Path)
		if ns := s.Glusterfs.EndpointsNamespace; ns != nil {
			if *ns == "" {
				e = append(e, field.Invalid(p.Child("endpointsNamespace"), *ns, "if the endpointnamespace is set, it must be a valid namespace name"))
			} else {
				e = append(e, validateNameWith(apivalidation.ValidateNamespaceName, *ns, p.Child("endpointsNamespace"))...)
			}
		}
		return e
	})
	one(s.Flocker != nil, "flocker", func() field.ErrorList { return podspec.ValidateFlocker(s.Flocker, fldPath.Child("flocker")) })
	one(s.NFS != nil, "nfs", func() field.ErrorList { return podspec.ValidateNFS(s.NFS, fldPath.Child("nfs")) })
	one(s.RBD != nil, "rbd", func() field.ErrorList {
		p := fldPath.Child("rbd")
		var e field.ErrorList
		if len(s.RBD.CephMonitors) == 0 {
			e = append(e, field.Required(p.Child("monitors"), ""))
		}
		return append(e, req(p, "image", s.RBD.RBDImage)...)
	})
	one(s.Quobyte != nil, "quobyte", func() field.ErrorList { return podspec.ValidateQuobyte(s.Quobyte, fldPath.Child("quobyte")) })
	one(s.CephFS != nil, "cephFS", func() field.ErrorList {
		if len(s.CephFS.Monitors) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("cephfs", "monitors"), "")}
		}
		return nil
	})
	one(s.ISCSI != nil, "iscsi", func() field.ErrorList {
		p := fldPath.Child("iscsi")
		e := req(p, "targetPortal", s.ISCSI.TargetPortal, "iqn", s.ISCSI.IQN)
		if s.ISCSI.InitiatorName != nil && len(pvName+":"+s.ISCSI.TargetPortal) > 64 {
			e = append(e, field.Invalid(p.Child("targetportal"), s.ISCSI.TargetPortal,
				"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
		}
		if s.ISCSI.Lun < 0 || s.ISCSI.Lun > 255 {
			e = append(e, field.Invalid(p.Child("lun"), s.ISCSI.Lun, "must be between 0 and 255, inclusive"))
		}
		if (s.ISCSI.DiscoveryCHAPAuth || s.ISCSI.SessionCHAPAuth) && s.ISCSI.SecretRef == nil {
			e = append(e, field.Required(p.Child("secretRef"), ""))
		}
		if s.ISCSI.SecretRef != nil && s.ISCSI.SecretRef.Name == "" {
			e = append(e, field.Required(p.Child("secretRef", "name"), ""))
		}
		return e
	})
	one(s.Cinder != nil, "cinder", func() field.ErrorList {
		p := fldPath.Child("cinder")
		e := req(p, "volumeID", s.Cinder.VolumeID)
		if ref := s.Cinder.SecretRef; ref != nil {
			e = append(e, req(p.Child("secretRef"), "name", ref.Name, "namespace", ref.Namespace)...)
		}
		return e
	})
	one(s.FC != nil, "fc", func() field.ErrorList { return podspec.ValidateFC(s.FC, fldPath.Child("fc")) })
	if s.FlexVolume != nil {
		// upstream counts flexVolume without the "more than one" check
		n++
		errs = append(errs, podspec.ValidateFlexVolume(s.FlexVolume.Driver, s.FlexVolume.Options, fldPath.Child("flexVolume"))...)
	}
	one(s.AzureFile != nil, "azureFile", func() field.ErrorList {
		p := fldPath.Child("azureFile")
		e := req(p, "secretName", s.AzureFile.SecretName, "shareName", s.AzureFile.ShareName)
		if ns := s.AzureFile.SecretNamespace; ns != nil && *ns == "" {
			e = append(e, field.Required(p.Child("secretNamespace"), ""))
		}
		return e
	})
	one(s.VsphereVolume != nil, "vsphereVolume", func() field.ErrorList {
		return req(fldPath.Child("vsphereVolume"), "volumePath", s.VsphereVolume.VolumePath)
	})
	one(s.PhotonPersistentDisk != nil, "photonPersistentDisk", func() field.ErrorList {
		return req(fldPath.Child("photonPersistentDisk"), "pdID", s.PhotonPersistentDisk.PdID)
	})
	one(s.PortworxVolume != nil, "portworxVolume", func() field.ErrorList {
		return req(fldPath.Child("portworxVolume"), "volumeID", s.PortworxVolume.VolumeID)
	})
	one(s.AzureDisk != nil, "azureDisk", func() field.ErrorList { return podspec.ValidateAzureDisk(s.AzureDisk, fldPath.Child("azureDisk")) })
	one(s.ScaleIO != nil, "scaleIO", func() field.ErrorList {
		return req(fldPath.Child("scaleIO"), "gateway", s.ScaleIO.Gateway, "system", s.ScaleIO.System, "volumeName", s.ScaleIO.VolumeName)
	})
	one(s.Local != nil, "local", func() field.ErrorList {
		p := fldPath.Child("local")
		var e field.ErrorList
		if s.Local.Path == "" {
			e = append(e, field.Required(p.Child("path"), ""))
		} else {
			for _, part := range splitPath(s.Local.Path) {
				if part == ".." {
					e = append(e, field.Invalid(p.Child("path"), s.Local.Path, "must not contain '..'"))
					break
				}
			}
		}
		if !nodeAffinitySet {
			e = append(e, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
		return e
	})
	one(s.StorageOS != nil, "storageos", func() field.ErrorList {
		p := fldPath.Child("storageos")
		var e field.ErrorList
		if s.StorageOS.VolumeName == "" {
			e = append(e, field.Required(p.Child("volumeName"), ""))
		} else {
			e = append(e, validateDNS1123Label(s.StorageOS.VolumeName, p.Child("volumeName"))...)
		}
		if s.StorageOS.VolumeNamespace != "" {
			e = append(e, validateDNS1123Label(s.StorageOS.VolumeNamespace, p.Child("volumeNamespace"))...)
		}
		if ref := s.StorageOS.SecretRef; ref != nil {
			e = append(e, req(p.Child("secretRef"), "name", ref.Name, "namespace", ref.Namespace)...)
		}
		return e
	})
	one(s.CSI != nil, "csi", func() field.ErrorList {
		p := fldPath.Child("csi")
		e := podspec.ValidateCSIDriverName(s.CSI.Driver, p.Child("driver"))
		e = append(e, req(p, "volumeHandle", s.CSI.VolumeHandle)...)
		for _, r := range []struct {
			ref  *corev1.SecretReference
			name string
		}{
			{s.CSI.ControllerPublishSecretRef, "controllerPublishSecretRef"},
			{s.CSI.ControllerExpandSecretRef, "controllerExpandSecretRef"},
			{s.CSI.NodePublishSecretRef, "nodePublishSecretRef"},
			{s.CSI.NodeExpandSecretRef, "nodeExpandSecretRef"},
		} {
			if r.ref != nil {
				e = append(e, secretRef(p.Child(r.name), r.ref)...)
			}
		}
		return e
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' || p[i] == '\\' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return out
}

func validatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	newSrc := pv.Spec.PersistentVolumeSource.DeepCopy()
	// A CSI volume may gain a controllerExpandSecretRef.
	if old.Spec.CSI != nil && old.Spec.CSI.ControllerExpandSecretRef == nil && newSrc.CSI != nil && newSrc.CSI.ControllerExpandSecretRef != nil {
		newSrc.CSI.ControllerExpandSecretRef = nil
	}
	if !equality.Semantic.DeepEqual(*newSrc, old.Spec.PersistentVolumeSource) {
		diff := cmp.Diff(old.Spec.PersistentVolumeSource, *newSrc)
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), fmt.Sprintf("spec.persistentvolumesource is immutable after creation\n%v", diff)))
	}
	// upstream reports this path without "spec"
	errs = append(errs, immutable(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil && !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable, except for updating from beta label to GA"))
	}
	if old.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}
