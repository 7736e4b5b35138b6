package core

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// AdmitMirrorPod is upstream's service account admission rule for mirror
// pods (pods with the kubernetes.io/config.mirror annotation, which node
// agents create for their static pods), checked on create: a mirror pod
// may not reference service accounts, secrets or service account token
// projections, since it must run without the API. Other pods pass.
func AdmitMirrorPod(pod *corev1.Pod) error {
	if _, ok := pod.Annotations[mirrorPodAnnotation]; !ok {
		return nil
	}
	deny := func(msg string) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New(msg))
	}
	if pod.Spec.ServiceAccountName != "" {
		return deny("a mirror pod may not reference service accounts")
	}
	if ReferencesSecrets(&pod.Spec) {
		return deny("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return deny("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// ReferencesSecrets reports whether spec names a Secret: image pull
// secrets, the environment of any container, secret, projected and CSI
// volumes, and the secret references of the other volume types.
func ReferencesSecrets(spec *corev1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	envRefs := func(envFrom []corev1.EnvFromSource, env []corev1.EnvVar) bool {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				return true
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return true
			}
		}
		return false
	}
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if envRefs(c.EnvFrom, c.Env) {
			return true
		}
	}
	for _, c := range spec.EphemeralContainers {
		if envRefs(c.EnvFrom, c.Env) {
			return true
		}
	}
	for _, v := range spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.Secret != nil,
			s.CSI != nil && s.CSI.NodePublishSecretRef != nil,
			s.AzureFile != nil && s.AzureFile.SecretName != "",
			s.CephFS != nil && s.CephFS.SecretRef != nil,
			s.Cinder != nil && s.Cinder.SecretRef != nil,
			s.FlexVolume != nil && s.FlexVolume.SecretRef != nil,
			s.ISCSI != nil && s.ISCSI.SecretRef != nil,
			s.RBD != nil && s.RBD.SecretRef != nil,
			s.ScaleIO != nil && s.ScaleIO.SecretRef != nil,
			s.StorageOS != nil && s.StorageOS.SecretRef != nil:
			return true
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					return true
				}
			}
		}
	}
	return false
}

// AdmitNodePod is upstream's NodeRestriction rule for a pod that node
// (a node identity) creates: only a mirror pod, bound to itself, with one
// owner reference, to itself as controller, not blocking owner deletion.
func AdmitNodePod(node string, pod *corev1.Pod) error {
	deny := func(msg string) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, errors.New(msg))
	}
	if _, ok := pod.Annotations[mirrorPodAnnotation]; !ok {
		return deny(fmt.Sprintf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, node))
	}
	if pod.Spec.NodeName != node {
		return deny(fmt.Sprintf("node %q can only create pods with spec.nodeName set to itself", node))
	}
	switch refs := pod.OwnerReferences; {
	case len(refs) > 1:
		return deny(fmt.Sprintf("node %q can only create pods with a single owner reference set to itself", node))
	case len(refs) == 0 || refs[0].APIVersion != "v1" || refs[0].Kind != "Node" || refs[0].Name != node:
		return deny(fmt.Sprintf("node %q can only create pods with an owner reference set to itself", node))
	case refs[0].Controller == nil || !*refs[0].Controller:
		return deny(fmt.Sprintf("node %q can only create pods with a controller owner reference set to itself", node))
	case refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion:
		return deny(fmt.Sprintf("node %q must not set blockOwnerDeletion on an owner reference", node))
	}
	return nil
}
