package podutil

import (
	corev1 "k8s.io/api/core/v1"
)

// References are the objects of its namespace a pod's node needs to run
// it: what upstream's node authorizer lets that node read.
type References struct {
	Secrets, ConfigMaps, PersistentVolumeClaims []string
	ServiceAccount                              string
	ResourceClaims                              []string
}

// ReferencesOf lists what pod references, each name once: Secrets (image
// pull secrets, environment, volumes of every kind that names one),
// ConfigMaps (environment, volumes), PersistentVolumeClaims (claims, and
// those generic ephemeral volumes create, named <pod>-<volume>), its
// ServiceAccount, and the ResourceClaims its status names.
func ReferencesOf(pod *corev1.Pod) References {
	var r References
	secrets, configMaps, claims := set{}, set{}, set{}
	for _, s := range pod.Spec.ImagePullSecrets {
		secrets.add(&r.Secrets, s.Name)
	}
	visitContainers(pod, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				secrets.add(&r.Secrets, e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				configMaps.add(&r.ConfigMaps, e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if e.ValueFrom.SecretKeyRef != nil {
				secrets.add(&r.Secrets, e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom.ConfigMapKeyRef != nil {
				configMaps.add(&r.ConfigMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		for _, name := range volumeSecrets(&v.VolumeSource) {
			secrets.add(&r.Secrets, name)
		}
		if v.ConfigMap != nil {
			configMaps.add(&r.ConfigMaps, v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					configMaps.add(&r.ConfigMaps, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					secrets.add(&r.Secrets, s.Secret.Name)
				}
			}
		}
		if name, ok := ClaimName(pod, v); ok {
			claims.add(&r.PersistentVolumeClaims, name)
		}
	}
	r.ServiceAccount = pod.Spec.ServiceAccountName
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			r.ResourceClaims = append(r.ResourceClaims, *s.ResourceClaimName)
		}
	}
	return r
}

// volumeSecrets are the Secrets a volume source names.
func volumeSecrets(v *corev1.VolumeSource) []string {
	var out []string
	ref := func(r *corev1.LocalObjectReference) {
		if r != nil {
			out = append(out, r.Name)
		}
	}
	switch {
	case v.Secret != nil:
		out = append(out, v.Secret.SecretName)
	case v.AzureFile != nil:
		out = append(out, v.AzureFile.SecretName)
	case v.CephFS != nil:
		ref(v.CephFS.SecretRef)
	case v.Cinder != nil:
		ref(v.Cinder.SecretRef)
	case v.FlexVolume != nil:
		ref(v.FlexVolume.SecretRef)
	case v.RBD != nil:
		ref(v.RBD.SecretRef)
	case v.ScaleIO != nil:
		ref(v.ScaleIO.SecretRef)
	case v.ISCSI != nil:
		ref(v.ISCSI.SecretRef)
	case v.StorageOS != nil:
		ref(v.StorageOS.SecretRef)
	case v.CSI != nil:
		ref(v.CSI.NodePublishSecretRef)
	}
	return out
}

// visitContainers calls f for every container: init, regular and
// ephemeral.
func visitContainers(pod *corev1.Pod, f func(*corev1.Container)) {
	for i := range pod.Spec.InitContainers {
		f(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		f((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// set keeps a list free of repeats and empty names.
type set map[string]bool

func (s set) add(list *[]string, name string) {
	if name == "" || s[name] {
		return
	}
	s[name] = true
	*list = append(*list, name)
}

// ClaimName is the PersistentVolumeClaim volume v of pod uses: the one it
// names, or for a generic ephemeral volume the one created for it,
// <pod>-<volume>; ok is false for other volumes.
func ClaimName(pod *corev1.Pod, v *corev1.Volume) (name string, ok bool) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName, true
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name, true
	}
	return "", false
}

// ClaimNames are the claims pod's volumes use (ClaimName of each), in
// volume order.
func ClaimNames(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		if name, ok := ClaimName(pod, &pod.Spec.Volumes[i]); ok {
			out = append(out, name)
		}
	}
	return out
}
