package podspec

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/api/certificates"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// volumeSourceKind is one member of a VolumeSource: its JSON name, the field
// path upstream reports for it, and its validator.
type volumeSourceKind struct {
	name     string // the field path child used in "may not specify more than 1 volume type"
	validate func() field.ErrorList
}

// volumeSourceNames lists the JSON names of the sources set in s, in
// upstream's checking order.
func volumeSourceNames(s *corev1.VolumeSource) []string {
	kinds := volumeSourceKinds(s, nil, "", nil, options{})
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.name)
	}
	return names
}

// volumeSourceKinds returns the set members of s with their validators, in
// the order upstream checks them (which decides which one is reported as
// the extra type).
func volumeSourceKinds(s *corev1.VolumeSource, fldPath *field.Path, volName string, podMeta *metav1.ObjectMeta, opts options) []volumeSourceKind {
	var kinds []volumeSourceKind
	add := func(set bool, name string, fn func() field.ErrorList) {
		if set {
			kinds = append(kinds, volumeSourceKind{name: name, validate: fn})
		}
	}
	add(s.EmptyDir != nil, "emptyDir", func() field.ErrorList {
		if s.EmptyDir.SizeLimit != nil && s.EmptyDir.SizeLimit.Cmp(resource.Quantity{}) < 0 {
			return field.ErrorList{field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity")}
		}
		return nil
	})
	add(s.HostPath != nil, "hostPath", func() field.ErrorList { return ValidateHostPathVolumeSource(s.HostPath, fldPath.Child("hostPath")) })
	add(s.GitRepo != nil, "gitRepo", func() field.ErrorList {
		var errs field.ErrorList
		if s.GitRepo.Repository == "" {
			errs = append(errs, field.Required(fldPath.Child("gitRepo", "repository"), ""))
		}
		return append(errs, validateLocalDescendingPath(s.GitRepo.Directory, fldPath.Child("gitRepo", "directory"))...)
	})
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk", func() field.ErrorList {
		p := fldPath.Child("persistentDisk")
		return requireAndPartition(s.GCEPersistentDisk.PDName, "pdName", s.GCEPersistentDisk.Partition, p)
	})
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore", func() field.ErrorList {
		p := fldPath.Child("awsElasticBlockStore")
		return requireAndPartition(s.AWSElasticBlockStore.VolumeID, "volumeID", s.AWSElasticBlockStore.Partition, p)
	})
	add(s.Secret != nil, "secret", func() field.ErrorList {
		p := fldPath.Child("secret")
		var errs field.ErrorList
		if s.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(s.Secret.DefaultMode, p.Child("defaultMode"))...)
		for i, kp := range s.Secret.Items {
			errs = append(errs, validateKeyToPath(&kp, p.Child("items").Index(i))...)
		}
		return errs
	})
	add(s.NFS != nil, "nfs", func() field.ErrorList { return ValidateNFS(s.NFS, fldPath.Child("nfs")) })
	add(s.ISCSI != nil, "iscsi", func() field.ErrorList {
		p := fldPath.Child("iscsi")
		errs := validateISCSI(s.ISCSI.TargetPortal, s.ISCSI.IQN, s.ISCSI.Lun, s.ISCSI.DiscoveryCHAPAuth || s.ISCSI.SessionCHAPAuth, s.ISCSI.SecretRef != nil, s.ISCSI.InitiatorName, p)
		if s.ISCSI.InitiatorName != nil && len(volName+":"+s.ISCSI.TargetPortal) > 64 {
			errs = append(errs, field.Invalid(fldPath.Child("name"), volName,
				"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
		}
		return errs
	})
	add(s.Glusterfs != nil, "glusterfs", func() field.ErrorList {
		p := fldPath.Child("glusterfs")
		return requireAll(p, "endpoints", s.Glusterfs.EndpointsName, "path", s.Glusterfs.Path)
	})
	add(s.Flocker != nil, "flocker", func() field.ErrorList { return ValidateFlocker(s.Flocker, fldPath.Child("flocker")) })
	add(s.PersistentVolumeClaim != nil, "persistentVolumeClaim", func() field.ErrorList {
		return requireAll(fldPath.Child("persistentVolumeClaim"), "claimName", s.PersistentVolumeClaim.ClaimName)
	})
	add(s.RBD != nil, "rbd", func() field.ErrorList {
		p := fldPath.Child("rbd")
		var errs field.ErrorList
		if len(s.RBD.CephMonitors) == 0 {
			errs = append(errs, field.Required(p.Child("monitors"), ""))
		}
		return append(errs, requireAll(p, "image", s.RBD.RBDImage)...)
	})
	add(s.Cinder != nil, "cinder", func() field.ErrorList {
		p := fldPath.Child("cinder")
		errs := requireAll(p, "volumeID", s.Cinder.VolumeID)
		if s.Cinder.SecretRef != nil && s.Cinder.SecretRef.Name == "" {
			errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
		}
		return errs
	})
	add(s.CephFS != nil, "cephFS", func() field.ErrorList {
		if len(s.CephFS.Monitors) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("cephfs", "monitors"), "")}
		}
		return nil
	})
	add(s.Quobyte != nil, "quobyte", func() field.ErrorList { return ValidateQuobyte(s.Quobyte, fldPath.Child("quobyte")) })
	// upstream misspells this child in the "more than 1 volume type" error.
	add(s.DownwardAPI != nil, "downwarAPI", func() field.ErrorList {
		p := fldPath.Child("downwardAPI")
		errs := validateFileMode(s.DownwardAPI.DefaultMode, p.Child("defaultMode"))
		for _, f := range s.DownwardAPI.Items {
			errs = append(errs, validateDownwardAPIVolumeFile(&f, p)...)
		}
		return errs
	})
	add(s.FC != nil, "fc", func() field.ErrorList { return ValidateFC(s.FC, fldPath.Child("fc")) })
	add(s.FlexVolume != nil, "flexVolume", func() field.ErrorList {
		return ValidateFlexVolume(s.FlexVolume.Driver, s.FlexVolume.Options, fldPath.Child("flexVolume"))
	})
	add(s.ConfigMap != nil, "configMap", func() field.ErrorList {
		p := fldPath.Child("configMap")
		errs := requireAll(p, "name", s.ConfigMap.Name)
		errs = append(errs, validateFileMode(s.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		for i, kp := range s.ConfigMap.Items {
			errs = append(errs, validateKeyToPath(&kp, p.Child("items").Index(i))...)
		}
		return errs
	})
	add(s.AzureFile != nil, "azureFile", func() field.ErrorList {
		return requireAll(fldPath.Child("azureFile"), "secretName", s.AzureFile.SecretName, "shareName", s.AzureFile.ShareName)
	})
	add(s.VsphereVolume != nil, "vsphereVolume", func() field.ErrorList {
		return requireAll(fldPath.Child("vsphereVolume"), "volumePath", s.VsphereVolume.VolumePath)
	})
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk", func() field.ErrorList {
		return requireAll(fldPath.Child("photonPersistentDisk"), "pdID", s.PhotonPersistentDisk.PdID)
	})
	add(s.PortworxVolume != nil, "portworxVolume", func() field.ErrorList {
		return requireAll(fldPath.Child("portworxVolume"), "volumeID", s.PortworxVolume.VolumeID)
	})
	add(s.AzureDisk != nil, "azureDisk", func() field.ErrorList { return ValidateAzureDisk(s.AzureDisk, fldPath.Child("azureDisk")) })
	add(s.StorageOS != nil, "storageos", func() field.ErrorList {
		p := fldPath.Child("storageos")
		var errs field.ErrorList
		if s.StorageOS.VolumeName == "" {
			errs = append(errs, field.Required(p.Child("volumeName"), ""))
		} else {
			errs = append(errs, ValidateDNS1123Label(s.StorageOS.VolumeName, p.Child("volumeName"))...)
		}
		if s.StorageOS.VolumeNamespace != "" {
			errs = append(errs, ValidateDNS1123Label(s.StorageOS.VolumeNamespace, p.Child("volumeNamespace"))...)
		}
		if s.StorageOS.SecretRef != nil && s.StorageOS.SecretRef.Name == "" {
			errs = append(errs, field.Required(p.Child("secretRef", "name"), ""))
		}
		return errs
	})
	add(s.Projected != nil, "projected", func() field.ErrorList { return validateProjected(s.Projected, fldPath.Child("projected")) })
	add(s.ScaleIO != nil, "scaleIO", func() field.ErrorList {
		return requireAll(fldPath.Child("scaleIO"), "gateway", s.ScaleIO.Gateway, "system", s.ScaleIO.System, "volumeName", s.ScaleIO.VolumeName)
	})
	add(s.CSI != nil, "csi", func() field.ErrorList {
		p := fldPath.Child("csi")
		errs := ValidateCSIDriverName(s.CSI.Driver, p.Child("driver"))
		if ref := s.CSI.NodePublishSecretRef; ref != nil {
			if ref.Name == "" {
				errs = append(errs, field.Required(p.Child("nodePublishSecretRef", "name"), ""))
			} else {
				for _, msg := range apivalidation.NameIsDNSSubdomain(ref.Name, false) {
					errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
				}
			}
		}
		return errs
	})
	add(s.Ephemeral != nil, "ephemeral", func() field.ErrorList {
		p := fldPath.Child("ephemeral")
		var errs field.ErrorList
		if s.Ephemeral.VolumeClaimTemplate == nil {
			errs = append(errs, field.Required(p.Child("volumeClaimTemplate"), ""))
		} else {
			tp := p.Child("volumeClaimTemplate")
			errs = append(errs, ValidateTemplateObjectMeta(&s.Ephemeral.VolumeClaimTemplate.ObjectMeta, tp.Child("metadata"))...)
			errs = append(errs, ValidatePersistentVolumeClaimSpec(&s.Ephemeral.VolumeClaimTemplate.Spec, tp.Child("spec"))...)
		}
		if podMeta != nil && podMeta.Name != "" && volName != "" {
			pvcName := podMeta.Name + "-" + volName
			for _, msg := range apivalidation.NameIsDNSSubdomain(pvcName, false) {
				errs = append(errs, field.Invalid(fldPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", pvcName, msg)))
			}
		}
		return errs
	})
	add(s.Image != nil, "image", func() field.ErrorList {
		p := fldPath.Child("image")
		var errs field.ErrorList
		if opts.resourceIsPod && s.Image.Reference == "" {
			errs = append(errs, field.Required(p.Child("reference"), ""))
		}
		return append(errs, validatePullPolicy(s.Image.PullPolicy, p.Child("pullPolicy"))...)
	})
	return kinds
}

func validateVolumes(volumes []corev1.Volume, podMeta *metav1.ObjectMeta, fldPath *field.Path, opts options) (map[string]corev1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	createdPVCs := sets.New[string]()
	if podMeta != nil && podMeta.Name != "" {
		for _, v := range volumes {
			if v.Ephemeral != nil {
				createdPVCs.Insert(podMeta.Name + "-" + v.Name)
			}
		}
	}
	vols := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		el := validateVolumeSource(&v.VolumeSource, idxPath, v.Name, podMeta, opts)
		if v.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, ValidateDNS1123Label(v.Name, namePath)...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(namePath, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
			vols[v.Name] = v.VolumeSource
		} else {
			allErrs = append(allErrs, el...)
		}
		if v.PersistentVolumeClaim != nil && createdPVCs.Has(v.PersistentVolumeClaim.ClaimName) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("persistentVolumeClaim", "claimName"), v.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return vols, allErrs
}

func validateVolumeSource(s *corev1.VolumeSource, fldPath *field.Path, volName string, podMeta *metav1.ObjectMeta, opts options) field.ErrorList {
	kinds := volumeSourceKinds(s, fldPath, volName, podMeta, opts)
	if len(kinds) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	var allErrs field.ErrorList
	for i, k := range kinds {
		if i > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(k.name), "may not specify more than 1 volume type"))
			continue
		}
		allErrs = append(allErrs, k.validate()...)
	}
	return allErrs
}

// requireAll takes (child, value) pairs and reports Required for every empty value.
func requireAll(p *field.Path, pairs ...string) field.ErrorList {
	var errs field.ErrorList
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			errs = append(errs, field.Required(p.Child(pairs[i]), ""))
		}
	}
	return errs
}

func requireAndPartition(v, child string, partition int32, p *field.Path) field.ErrorList {
	errs := requireAll(p, child, v)
	if partition < 0 || partition > 255 {
		errs = append(errs, field.Invalid(p.Child("partition"), partition, validation.InclusiveRangeError(1, 255)))
	}
	return errs
}

func validateFileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kp.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(errs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

// ValidateHostPathVolumeSource checks a hostPath volume (pods and PVs).
func ValidateHostPathVolumeSource(h *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(h.Path, fldPath.Child("path"))
	if h.Type != nil {
		valid := []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
			corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket}
		ok := false
		for _, t := range valid {
			ok = ok || *h.Type == t
		}
		if !ok {
			errs = append(errs, field.NotSupported(fldPath.Child("type"), h.Type, valid))
		}
	}
	return errs
}

// ValidateNFS checks an NFS volume (pods and PVs).
func ValidateNFS(nfs *corev1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := requireAll(fldPath, "server", nfs.Server, "path", nfs.Path)
	if !path.IsAbs(nfs.Path) {
		errs = append(errs, field.Invalid(fldPath.Child("path"), nfs.Path, "must be an absolute path"))
	}
	return errs
}

// ValidateFlocker checks a Flocker volume (pods and PVs).
func ValidateFlocker(f *corev1.FlockerVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.DatasetName == "" && f.DatasetUUID == "" {
		errs = append(errs, field.Required(fldPath, "one of datasetName and datasetUUID is required"))
	}
	if f.DatasetName != "" && f.DatasetUUID != "" {
		errs = append(errs, field.Invalid(fldPath, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
	}
	if strings.Contains(f.DatasetName, "/") {
		errs = append(errs, field.Invalid(fldPath.Child("datasetName"), f.DatasetName, "must not contain '/'"))
	}
	return errs
}

// ValidateQuobyte checks a Quobyte volume (pods and PVs).
func ValidateQuobyte(q *corev1.QuobyteVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	const hostPortMsg = "must be a host:port pair or multiple pairs separated by commas"
	switch {
	case q.Registry == "":
		errs = append(errs, field.Required(fldPath.Child("registry"), hostPortMsg))
	case len(q.Tenant) >= 65:
		errs = append(errs, field.Required(fldPath.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, hp := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				errs = append(errs, field.Invalid(fldPath.Child("registry"), q.Registry, hostPortMsg))
			}
		}
	}
	return append(errs, requireAll(fldPath, "volume", q.Volume)...)
}

// ValidateFC checks a Fibre Channel volume (pods and PVs).
func ValidateFC(fc *corev1.FCVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(fc.TargetWWNs) < 1 && len(fc.WWIDs) < 1 {
		errs = append(errs, field.Required(fldPath.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		errs = append(errs, field.Invalid(fldPath.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			errs = append(errs, field.Required(fldPath.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *fc.Lun < 0 || *fc.Lun > 255 {
			errs = append(errs, field.Invalid(fldPath.Child("lun"), fc.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return errs
}

// ValidateFlexVolume checks a flexVolume's driver and option keys.
func ValidateFlexVolume(driver string, options map[string]string, fldPath *field.Path) field.ErrorList {
	errs := requireAll(fldPath, "driver", driver)
	for k := range options {
		ns := k
		if parts := strings.SplitN(k, "/", 2); len(parts) == 2 {
			ns = parts[0]
		}
		n := "." + strings.ToLower(ns)
		if strings.HasSuffix(n, ".kubernetes.io") || strings.HasSuffix(n, ".k8s.io") {
			errs = append(errs, field.Invalid(fldPath.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
		}
	}
	return errs
}

// ValidateAzureDisk checks an Azure disk volume (pods and PVs).
func ValidateAzureDisk(a *corev1.AzureDiskVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := requireAll(fldPath, "diskName", a.DiskName, "diskURI", a.DataDiskURI)
	modes := []corev1.AzureDataDiskCachingMode{corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite}
	if a.CachingMode != nil && !contains(modes, *a.CachingMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("cachingMode"), *a.CachingMode, modes))
	}
	kinds := []corev1.AzureDataDiskKind{corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk}
	if a.Kind != nil && !contains(kinds, *a.Kind) {
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), *a.Kind, kinds))
	}
	if a.Kind != nil && *a.Kind == corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "/subscriptions/") {
		errs = append(errs, field.NotSupported(fldPath.Child("diskURI"), a.DataDiskURI,
			[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
	}
	if a.Kind != nil && *a.Kind != corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "https://") {
		errs = append(errs, field.NotSupported(fldPath.Child("diskURI"), a.DataDiskURI,
			[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
	}
	return errs
}

// ValidateCSIDriverName checks a CSI driver name.
func ValidateCSIDriverName(driver string, fldPath *field.Path) field.ErrorList {
	if driver == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if len(driver) > 63 {
		errs = append(errs, field.TooLong(fldPath, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(driver)) {
		errs = append(errs, field.Invalid(fldPath, driver, msg))
	}
	return errs
}

func validateISCSI(portal, iqn string, lun int32, chap, hasSecret bool, initiator *string, fldPath *field.Path) field.ErrorList {
	errs := requireAll(fldPath, "targetPortal", portal, "iqn", iqn)
	if iqn != "" && !strings.HasPrefix(iqn, "iqn") && !strings.HasPrefix(iqn, "eui") && !strings.HasPrefix(iqn, "naa") {
		errs = append(errs, field.Invalid(fldPath.Child("iqn"), iqn, "must be valid format starting with iqn, eui, or naa"))
	}
	if lun < 0 || lun > 255 {
		errs = append(errs, field.Invalid(fldPath.Child("lun"), lun, validation.InclusiveRangeError(0, 255)))
	}
	if chap && !hasSecret {
		errs = append(errs, field.Required(fldPath.Child("secretRef"), ""))
	}
	if initiator != nil {
		in := *initiator
		if !strings.HasPrefix(in, "iqn") && !strings.HasPrefix(in, "eui") && !strings.HasPrefix(in, "naa") {
			errs = append(errs, field.Invalid(fldPath.Child("initiatorname"), in, "must be valid format starting with iqn, eui, or naa"))
		}
	}
	return errs
}

var (
	volumeDownwardAPIFields = sets.New("metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid")
	envDownwardAPIFields    = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
		"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	containerResourceFields = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage")
)

func validateDownwardAPIVolumeFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, volumeDownwardAPIFields, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, fldPath.Child("resourceFieldRef"), true)...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, fldPath.Child("mode"))...)
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, valid sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	p := fs.FieldPath
	if i := strings.Index(p, "["); i > 0 && strings.HasSuffix(p, "]") {
		sub := strings.Trim(p[i+1:len(p)-1], `'"`)
		p = p[:i]
		switch p {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(sub), fldPath)
		case "metadata.labels":
			return validateQualifiedName(sub, fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath, p, "does not support subscript")}
	}
	if !valid.Has(p) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), p, sets.List(valid))}
	}
	return nil
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, fldPath *field.Path, volume bool) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !containerResourceFields.Has(fs.Resource) && !strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(containerResourceFields)))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	d := fs.Divisor.String()
	bytesDivisors := sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
	const byteList = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
	switch fs.Resource {
	case "limits.cpu", "requests.cpu":
		if d != "1m" && d != "1" {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !bytesDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values "+byteList+" are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !bytesDivisors.Has(d) {
			errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values "+byteList+" are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")) && !bytesDivisors.Has(d) {
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values "+byteList+" are supported with the hugepages resource"))
	}
	return errs
}

func validateProjected(p *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateFileMode(p.DefaultMode, fldPath.Child("defaultMode"))
	errs = append(errs, validateUserField(p.DefaultUser, fldPath.Child("defaultUser"))...)
	paths := sets.New[string]()
	// dupErr records path cur, reporting it if another source has it.
	dupErr := func(cur string, bad any) *field.Error {
		if cur == "" {
			return nil
		}
		if paths.Has(cur) {
			return field.Invalid(fldPath, bad, "conflicting duplicate paths")
		}
		paths.Insert(cur)
		return nil
	}
	dup := func(cur string, bad any) {
		if e := dupErr(cur, bad); e != nil {
			errs = append(errs, e)
		}
	}
	for i, src := range p.Sources {
		n := 0
		sp := fldPath.Child("sources").Index(i)
		if src.Secret != nil {
			n++
			pp := sp.Child("secret")
			if src.Secret.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			for j, kp := range src.Secret.Items {
				errs = append(errs, validateKeyToPath(&kp, pp.Child("items").Index(j))...)
				dup(kp.Path, src.Secret.Name)
			}
		}
		if src.ConfigMap != nil {
			n++
			pp := sp.Child("configMap")
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			for j, kp := range src.ConfigMap.Items {
				errs = append(errs, validateKeyToPath(&kp, pp.Child("items").Index(j))...)
				dup(kp.Path, src.ConfigMap.Name)
			}
		}
		if src.DownwardAPI != nil {
			n++
			pp := sp.Child("downwardAPI")
			for _, f := range src.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIVolumeFile(&f, pp)...)
				dup(f.Path, f.Path)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			pp := sp.Child("serviceAccountToken")
			exp := int64(0)
			if t.ExpirationSeconds != nil {
				exp = *t.ExpirationSeconds
			}
			if exp < 10*60 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
			}
			if exp > 1<<32 {
				errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
			}
			if t.Path == "" {
				errs = append(errs, field.Required(fldPath.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, fldPath.Child("path"))...)
			}
			errs = append(errs, validateUserField(t.User, pp.Child("user"))...)
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			pp := sp.Child("clusterTrustBundle")
			switch {
			case b.Name != nil && b.SignerName != nil:
				errs = append(errs, field.Invalid(pp, b, "only one of name and signerName may be used"))
			case b.Name != nil:
				if *b.Name == "" {
					errs = append(errs, field.Required(pp.Child("name"), "must be a valid object name"))
				}
				signer := ""
				if i := strings.LastIndex(*b.Name, ":"); i >= 0 {
					signer = strings.ReplaceAll((*b.Name)[:i], ":", "/")
				}
				for _, msg := range certificates.ClusterTrustBundleNameRule(signer)(*b.Name, false) {
					errs = append(errs, field.Invalid(pp.Child("name"), *b.Name, "not a valid clustertrustbundlename: "+msg))
				}
				if b.LabelSelector != nil {
					errs = append(errs, field.Invalid(pp.Child("labelSelector"), b.LabelSelector, "labelSelector must be unset if name is specified"))
				}
			case b.SignerName != nil:
				if *b.SignerName == "" {
					errs = append(errs, field.Required(pp.Child("signerName"), "must be a valid signer name"))
				}
				errs = append(errs, certificates.ValidateSignerName(pp.Child("signerName"), *b.SignerName)...)
				errs = append(errs, metavalidation.ValidateLabelSelector(b.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, pp.Child("labelSelector"))...)
			default:
				errs = append(errs, field.Required(pp, "either name or signerName must be specified"))
			}
			if b.Path == "" {
				errs = append(errs, field.Required(pp.Child("path"), ""))
			}
			errs = append(errs, validateUserField(b.User, pp.Child("user"))...)
			errs = append(errs, validateLocalNonReservedPath(b.Path, pp.Child("path"))...)
			dup(b.Path, b.Path)
		}
		if c := src.PodCertificate; c != nil {
			n++
			errs = append(errs, validatePodCertificateProjection(c, sp.Child("podCertificate"), dupErr)...)
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// podCertificateKeyTypes are the key types a podCertificate projection
// may ask for, in upstream's order.
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// validatePodCertificateProjection checks one podCertificate source as
// upstream does; dup records each path it writes, returning collisions
// with the volume's other sources.
func validatePodCertificateProjection(c *corev1.PodCertificateProjection, pp *field.Path, dup func(cur string, bad any) *field.Error) field.ErrorList {
	errs := certificates.ValidateSignerName(pp.Child("signerName"), c.SignerName)
	if c.UserAnnotations != nil {
		errs = append(errs, certificates.ValidateUserAnnotations(c.UserAnnotations, pp.Child("userAnnotations"))...)
	}
	errs = append(errs, validateUserField(c.User, pp.Child("user"))...)
	if !contains(podCertificateKeyTypes, c.KeyType) {
		errs = append(errs, field.NotSupported(pp.Child("keyType"), c.KeyType, podCertificateKeyTypes))
	}
	if e := c.MaxExpirationSeconds; e != nil {
		if *e < certificates.MinMaxExpirationSeconds {
			errs = append(errs, field.Invalid(pp.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", certificates.MinMaxExpirationSeconds)))
		}
		upper := certificates.MaxMaxExpirationSeconds
		if certificates.IsKubernetesSigner(c.SignerName) {
			upper = certificates.KubernetesMaxMaxExpirationSeconds
		}
		if *e > int32(upper) {
			errs = append(errs, field.Invalid(pp.Child("maxExpirationSeconds"), *e, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", upper)))
		}
	}
	paths := 0
	for _, f := range []struct {
		name, path string
	}{{"credentialBundlePath", c.CredentialBundlePath}, {"keyPath", c.KeyPath}, {"certificateChainPath", c.CertificateChainPath}} {
		if f.path == "" {
			continue
		}
		paths++
		errs = append(errs, validateLocalNonReservedPath(f.path, pp.Child(f.name))...)
		if e := dup(f.path, f.path); e != nil {
			errs = append(errs, e)
		}
	}
	if paths == 0 {
		errs = append(errs, field.Required(pp, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath"))
	}
	return errs
}

// validateUserField: a user ID in the range Linux allows.
func validateUserField(user *int64, fldPath *field.Path) field.ErrorList {
	if user == nil {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsValidUserID(*user) {
		errs = append(errs, field.Invalid(fldPath, *user, msg))
	}
	return errs
}

// validateLocalDescendingPath: relative and without "..".
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(p, fldPath)...)
}

func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		errs = append(errs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return errs
}

// ValidateTemplateObjectMeta checks the metadata of an embedded template
// that may carry only labels and annotations.
func ValidateTemplateObjectMeta(m *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))
	errs = append(errs, metavalidation.ValidateLabels(m.Labels, fldPath.Child("labels"))...)
	rest := m.DeepCopy()
	rest.Labels, rest.Annotations = nil, nil
	if rest.Name != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("name"), "cannot be set"))
	}
	if rest.GenerateName != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("generateName"), "cannot be set"))
	}
	if rest.Namespace != "" {
		errs = append(errs, field.Forbidden(fldPath.Child("namespace"), "cannot be set"))
	}
	if len(rest.Finalizers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("finalizers"), "cannot be set"))
	}
	if len(rest.OwnerReferences) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("ownerReferences"), "cannot be set"))
	}
	return errs
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
