package podspec

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// DefaultPodSpec sets the unset fields of spec to upstream's core/v1
// defaults, the way they appear in any object embedding a PodSpec (pod
// templates of Deployments, Jobs, …): restartPolicy, dnsPolicy,
// securityContext, terminationGracePeriodSeconds, schedulerName, and the
// defaults of every container, probe, lifecycle handler, env var and volume.
//
// It does not apply the defaults upstream reserves for Pod objects
// (requests copied from limits, enableServiceLinks, host ports under
// hostNetwork): DefaultPod adds those. Keeping them out of templates matches
// upstream, where adding them would change every workload's template.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec == nil {
		return
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	RoundUpResourceList(spec.Overhead)
}

// DefaultPodTemplateSpec defaults the pod spec inside a template (nil is a
// no-op). Template metadata has no defaults.
func DefaultPodTemplateSpec(t *corev1.PodTemplateSpec) {
	if t == nil {
		return
	}
	DefaultPodSpec(&t.Spec)
}

// DefaultPod applies DefaultPodSpec plus the defaults upstream gives only to
// Pod objects: container and init-container requests default to their
// limits, spec.enableServiceLinks to true, and with hostNetwork every
// container port's hostPort to its containerPort.
func DefaultPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	spec := &pod.Spec
	// Requests are copied from limits before the spec-level pass rounds both.
	for i := range spec.Containers {
		defaultRequestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		defaultRequestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if spec.HostNetwork {
		defaultHostPorts(spec.Containers)
		defaultHostPorts(spec.InitContainers)
	}
	DefaultPodSpec(spec)
}

func defaultRequestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = q.DeepCopy()
		}
	}
}

func defaultHostPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// RoundUpResourceList rounds every quantity up to milli precision, as
// upstream's ResourceList defaulting does (e.g. "0.0001" becomes "1m").
func RoundUpResourceList(rl corev1.ResourceList) {
	for name, q := range rl {
		q.RoundUp(resource.Milli)
		rl[name] = q
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil {
			defaultFieldSelector(vf.FieldRef)
		}
	}
	RoundUpResourceList(c.Resources.Limits)
	RoundUpResourceList(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			defaultHTTPGet(c.Lifecycle.PostStart.HTTPGet)
		}
		if c.Lifecycle.PreStop != nil {
			defaultHTTPGet(c.Lifecycle.PreStop.HTTPGet)
		}
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultFieldSelector(fs *corev1.ObjectFieldSelector) {
	if fs.APIVersion == "" {
		fs.APIVersion = "v1"
	}
}

func defaultVolume(v *corev1.Volume) {
	if volumeSourceEmpty(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.HostPath != nil {
		DefaultHostPath(src.HostPath)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range src.DownwardAPI.Items {
			if fr := src.DownwardAPI.Items[i].FieldRef; fr != nil {
				defaultFieldSelector(fr)
			}
		}
	}
	if src.Projected != nil {
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range src.Projected.Sources {
			s := &src.Projected.Sources[i]
			if s.DownwardAPI != nil {
				for j := range s.DownwardAPI.Items {
					if fr := s.DownwardAPI.Items[j].FieldRef; fr != nil {
						defaultFieldSelector(fr)
					}
				}
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				s.ServiceAccountToken.ExpirationSeconds = ptr.To(int64(time.Hour.Seconds()))
			}
		}
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if src.RBD != nil {
		DefaultRBD(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.AzureDisk != nil {
		DefaultAzureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		DefaultScaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		DefaultPersistentVolumeClaimSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		if imageTag(src.Image.Reference) == "latest" {
			src.Image.PullPolicy = corev1.PullAlways
		} else {
			src.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
}

// DefaultHostPath sets a hostPath volume's type to "" (HostPathUnset) when nil.
func DefaultHostPath(h *corev1.HostPathVolumeSource) {
	if h.Type == nil {
		h.Type = ptr.To(corev1.HostPathUnset)
	}
}

// DefaultRBD sets the defaults of an RBD volume (pool "rbd", user "admin",
// keyring "/etc/ceph/keyring").
func DefaultRBD(pool, user, keyring *string) {
	if *pool == "" {
		*pool = "rbd"
	}
	if *user == "" {
		*user = "admin"
	}
	if *keyring == "" {
		*keyring = "/etc/ceph/keyring"
	}
}

// DefaultAzureDisk sets cachingMode ReadWrite, fsType ext4, readOnly false
// and kind Shared when unset.
func DefaultAzureDisk(a *corev1.AzureDiskVolumeSource) {
	if a.CachingMode == nil {
		a.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
	}
	if a.Kind == nil {
		a.Kind = ptr.To(corev1.AzureSharedBlobDisk)
	}
	if a.FSType == nil {
		a.FSType = ptr.To("ext4")
	}
	if a.ReadOnly == nil {
		a.ReadOnly = ptr.To(false)
	}
}

// DefaultScaleIO sets storageMode ThinProvisioned and fsType xfs when unset.
func DefaultScaleIO(storageMode, fsType *string) {
	if *storageMode == "" {
		*storageMode = "ThinProvisioned"
	}
	if *fsType == "" {
		*fsType = "xfs"
	}
}

// DefaultPersistentVolumeClaimSpec sets volumeMode Filesystem and rounds the
// resource quantities, as upstream does for claims and claim templates.
func DefaultPersistentVolumeClaimSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	RoundUpResourceList(s.Resources.Limits)
	RoundUpResourceList(s.Resources.Requests)
}

// volumeSourceEmpty reports whether no volume source is set.
func volumeSourceEmpty(s *corev1.VolumeSource) bool {
	return len(volumeSourceNames(s)) == 0
}

// imageTag returns the tag an image reference carries the way upstream's
// image-name parser sees it: "latest" when there is neither tag nor digest,
// "" when there is only a digest or the reference cannot be parsed.
func imageTag(image string) string {
	if image == "" || strings.ContainsAny(image, " \t\r\n") {
		return ""
	}
	name := image
	digest := ""
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
		if digest == "" || !strings.Contains(digest, ":") {
			return ""
		}
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i+1:], "/") {
		name, tag = name[:i], name[i+1:]
		if tag == "" {
			return ""
		}
	}
	if name == "" || strings.HasSuffix(name, "/") {
		return ""
	}
	// The repository path (everything after a domain component) must be
	// lowercase; a domain is a first component holding '.' or ':' or
	// "localhost".
	path := name
	if i := strings.Index(name, "/"); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
			path = name[i+1:]
		}
	}
	if strings.ToLower(path) != path {
		return ""
	}
	if tag == "" && digest == "" {
		return "latest"
	}
	return tag
}
