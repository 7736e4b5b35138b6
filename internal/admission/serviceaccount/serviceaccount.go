package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/admission"
)

// Name is the plugin's name, as upstream's.
const Name = "ServiceAccount"

// Upstream's names.
const (
	DefaultServiceAccountName = "default"
	// VolumeNamePrefix starts the name of the projected token volume.
	VolumeNamePrefix = "kube-api-access-"
	// MountPath is where every container gets the token, CA and namespace.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenExpirationSeconds is what the mounted token asks for.
	TokenExpirationSeconds = 60*60 + 7
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// ObjectReader reads API objects (the API server's storage).
type ObjectReader interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
}

// Plugin is the ServiceAccount admission plugin.
type Plugin struct {
	// Objects reads service accounts; set it before the first request.
	Objects ObjectReader
	// sleep waits between lookups of the default service account.
	sleep func(time.Duration)
}

// New returns the plugin; set Objects before use.
func New() *Plugin { return &Plugin{sleep: time.Sleep} }

var (
	podsGR             = schema.GroupResource{Resource: "pods"}
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

// Step is the plugin's place in the admission chain: it mutates pods
// being created.
func (p *Plugin) Step() admission.Plugin {
	return admission.Plugin{Name: Name, Resources: []schema.GroupResource{podsGR}, Operations: []admission.Operation{admission.Create}, Mutate: p.Mutate}
}

// Mutate applies the plugin to a pod being created (other objects pass).
func (p *Plugin) Mutate(ctx context.Context, a *admission.Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return validateMirrorPod(pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	// The deprecated field mirrors the name, as upstream's conversion does.
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := p.serviceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return apierrors.NewForbidden(podsGR, pod.Name, fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		for _, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
		}
	}
	return nil
}

// serviceAccount reads ns/name; the default account, which the
// service-account controller creates just after its namespace, is tried
// ten times 100–200 ms apart, as upstream does.
func (p *Plugin) serviceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = 10
	}
	interval := time.Duration(100+rand.IntN(100)) * time.Millisecond
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if ctx.Err() != nil {
				break
			}
			p.sleep(interval)
		}
		obj, err := p.Objects.Get(ctx, serviceAccountsGVR, ns, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
}

// automount: the pod's choice wins, then the service account's; default true.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume in every container and init
// container (not ephemeral ones) that has nothing at MountPath, adding the
// volume unless the pod already has a kube-api-access-* volume.
func mountToken(pod *corev1.Pod) {
	volumeName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, VolumeNamePrefix) {
			volumeName = v.Name
			break
		}
	}
	hasVolume := volumeName != ""
	if !hasVolume {
		volumeName = VolumeNamePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: MountPath}
	needed := false
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			c := &containers[i]
			mounted := false
			for _, m := range c.VolumeMounts {
				if m.MountPath == MountPath {
					mounted = true
					break
				}
			}
			if !mounted {
				c.VolumeMounts = append(c.VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volumeName, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

// TokenVolumeSource is the projected volume upstream mounts, with its
// defaults set (admission runs after defaulting).
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To(int64(TokenExpirationSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}

// validateMirrorPod rejects mirror pods that name a service account or
// use secrets or a token projection, with upstream's messages.
func validateMirrorPod(pod *corev1.Pod) error {
	forbid := func(msg string) error { return apierrors.NewForbidden(podsGR, pod.Name, errors.New(msg)) }
	if pod.Spec.ServiceAccountName != "" {
		return forbid("a mirror pod may not reference service accounts")
	}
	if usesSecrets(pod) {
		return forbid("a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return forbid("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// usesSecrets reports whether pod refers to any secret: image pull
// secrets, secret volumes and projections, env and envFrom.
func usesSecrets(pod *corev1.Pod) bool {
	if len(pod.Spec.ImagePullSecrets) > 0 {
		return true
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					return true
				}
			}
		}
	}
	check := func(cs []corev1.Container) bool {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					return true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return true
				}
			}
		}
		return false
	}
	return check(pod.Spec.InitContainers) || check(pod.Spec.Containers)
}
