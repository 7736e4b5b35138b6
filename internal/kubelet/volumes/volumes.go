package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/kubelet/atomicwriter"
	"plainkube.dev/plainkube/internal/kubelet/env"
)

// Volumes. Each volume of a pod that the agent provides itself is a
// directory <DataDir>/volumes/<pod uid>/<volume>; a hostPath volume is its
// host path. Containers get them as CRI bind mounts.
//
//   - emptyDir: a directory on the data directory's disk (mode 0777), or
//     with medium Memory a tmpfs sized as upstream: the sizeLimit, else
//     the pod's memory limit, else the node's allocatable memory.
//   - configMap, secret, downwardAPI, projected: files written by the
//     atomic writer (package atomicwriter); a secret, downwardAPI or
//     projected volume is on a tmpfs of its own (as upstream: secrets do
//     not touch the disk).
//
// This file holds the pure parts (what files a volume holds, with which
// modes; which mounts a container gets) and the set-up of one volume;
// manager.go decides when volumes are set up and refreshed.

// Upstream's default file modes (the API defaults defaultMode to them too).
const (
	defaultFileMode = 0o644
	// tokenFileModeOwned is a service account token's mode when the pod
	// names an fsUser or fsGroup for it.
	tokenFileModeOwned = 0o600
)

// payload is the files of a volume, by path relative to it.
type payload = map[string]atomicwriter.File

// fileMode is *m as a permission mode, or def.
func fileMode(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// keyFiles adds to p the files of a volume made of data (a ConfigMap's or
// a Secret's): every key as a file, or with items only those keys at
// their paths. A key of items that is missing is an error (missingKey's)
// unless the volume is optional.
func keyFiles(p payload, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool, missingKey func(key string) error) error {
	mode := fileMode(defaultMode, defaultFileMode)
	if len(items) == 0 {
		for k, v := range data {
			p[k] = atomicwriter.File{Data: v, Mode: mode}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return missingKey(it.Key)
		}
		if err := checkRelative(it.Path); err != nil {
			return fmt.Errorf("item %q: %w", it.Key, err)
		}
		p[path.Clean(it.Path)] = atomicwriter.File{Data: v, Mode: fileMode(it.Mode, mode)}
	}
	return nil
}

// configMapData is a ConfigMap's data and binary data as bytes.
func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	if cm == nil {
		return nil
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return data
}

// Upstream's errors for a missing key of a volume's items.
func missingConfigMapKey(key string) error {
	return fmt.Errorf("configmap references non-existent config key: %s", key)
}

func missingSecretKey(key string) error {
	return fmt.Errorf("references non-existent secret key: %s", key)
}

// volumeObjects gives the volume set-up what it reads from the API:
// ConfigMaps and Secrets of the pod's namespace (a missing one is an
// apierrors NotFound) and service account tokens.
type volumeObjects struct {
	ConfigMap func(name string) (*corev1.ConfigMap, error)
	Secret    func(name string) (*corev1.Secret, error)
	Token     func(t *corev1.ServiceAccountTokenProjection) (string, error)
	// TrustBundle reads a ClusterTrustBundle; TrustBundles lists a
	// signer's.
	TrustBundle  func(name string) (*certificatesv1.ClusterTrustBundle, error)
	TrustBundles func(signerName string) ([]certificatesv1.ClusterTrustBundle, error)
	// PodCertificate is the PEM key and certificate chain of source
	// index of the pod's projected volume.
	PodCertificate func(volume string, index int, src *corev1.PodCertificateProjection) (key, chain []byte, err error)
	// Claim and Volume read the pod's PersistentVolumeClaims and the
	// PersistentVolumes they are bound to.
	Claim  func(name string) (*corev1.PersistentVolumeClaim, error)
	Volume func(name string) (*corev1.PersistentVolume, error)
	// Allocatable is the node's, for limits that containers do not set.
	Allocatable corev1.ResourceList
}

// getOptional reads an object with get; a missing optional one is nil
// with no error. A missing one is upstream's "<kind> "<name>" not found".
func getOptional[T any](get func(string) (*T, error), kind, name string, optional bool) (*T, error) {
	obj, err := get(name)
	switch {
	case apierrors.IsNotFound(err) && optional:
		return nil, nil
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s %q not found", kind, name)
	case err != nil:
		return nil, err
	}
	return obj, nil
}

func configMapPayload(src *corev1.ConfigMapVolumeSource, objs volumeObjects) (payload, error) {
	cm, err := getOptional(objs.ConfigMap, "configmap", src.Name, ptr.Deref(src.Optional, false))
	if err != nil {
		return nil, err
	}
	p := payload{}
	err = keyFiles(p, configMapData(cm), src.Items, src.DefaultMode, ptr.Deref(src.Optional, false), missingConfigMapKey)
	return p, err
}

func secretPayload(src *corev1.SecretVolumeSource, objs volumeObjects) (payload, error) {
	s, err := getOptional(objs.Secret, "secret", src.SecretName, ptr.Deref(src.Optional, false))
	if err != nil {
		return nil, err
	}
	var data map[string][]byte
	if s != nil {
		data = s.Data
	}
	p := payload{}
	err = keyFiles(p, data, src.Items, src.DefaultMode, ptr.Deref(src.Optional, false), missingSecretKey)
	return p, err
}

// downwardAPIFiles adds to p the files of downward API items: pod fields
// (metadata name, namespace, uid, labels, annotations and their ['key']
// forms) and container resources.
func downwardAPIFiles(p payload, pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, allocatable corev1.ResourceList) error {
	mode := fileMode(defaultMode, defaultFileMode)
	for _, it := range items {
		if err := checkRelative(it.Path); err != nil {
			return err
		}
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = volumeField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := podutil.Container(pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return fmt.Errorf("container %q not found in pod %s/%s", it.ResourceFieldRef.ContainerName, pod.Namespace, pod.Name)
			}
			v, err = env.ContainerResource(c, it.ResourceFieldRef, allocatable)
		default:
			err = fmt.Errorf("item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return err
		}
		p[path.Clean(it.Path)] = atomicwriter.File{Data: []byte(v), Mode: fileMode(it.Mode, mode)}
	}
	return nil
}

// volumeField is a pod field a downward API volume may hold.
func volumeField(pod *corev1.Pod, fieldPath string) (string, error) {
	switch {
	case fieldPath == "metadata.name", fieldPath == "metadata.namespace", fieldPath == "metadata.uid",
		fieldPath == "metadata.labels", fieldPath == "metadata.annotations",
		strings.HasPrefix(fieldPath, "metadata.labels['"), strings.HasPrefix(fieldPath, "metadata.annotations['"):
		return env.PodField(pod, fieldPath, env.Source{})
	}
	return "", fmt.Errorf("unsupported fieldPath %q in a downward API volume", fieldPath)
}

// projectionOwner is who owns a projected service account token: the
// user all the pod's containers run as (if they agree), and whether the
// pod has an fsGroup; either makes the token's mode 0600.
type projectionOwner struct {
	FsUser  *int64
	FsGroup bool
}

func podProjectionOwner(pod *corev1.Pod) projectionOwner {
	o := projectionOwner{FsGroup: pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil}
	var podUser *int64
	if pod.Spec.SecurityContext != nil {
		podUser = pod.Spec.SecurityContext.RunAsUser
	}
	var user *int64
	for i, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		u := podUser
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			u = c.SecurityContext.RunAsUser
		}
		if u == nil || (i > 0 && (user == nil || *user != *u)) {
			return o
		}
		user = u
	}
	o.FsUser = user
	return o
}

// projectedPayload is the files of a projected volume: each source's, in
// order (a later path replaces an earlier one). Every failing source is
// reported.
func projectedPayload(pod *corev1.Pod, volume string, src *corev1.ProjectedVolumeSource, objs volumeObjects) (payload, error) {
	p := payload{}
	mode := fileMode(src.DefaultMode, defaultFileMode)
	modeP := int32(mode)
	owner := podProjectionOwner(pod)
	// owned is a file of credentials: 0600 when the pod names an owner.
	owned := func(data []byte) atomicwriter.File {
		f := atomicwriter.File{Data: data, Mode: mode, FsUser: owner.FsUser}
		if owner.FsUser != nil || owner.FsGroup {
			f.Mode = tokenFileModeOwned
		}
		return f
	}
	var errs []error
	for i, s := range src.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			var cm *corev1.ConfigMap
			cm, err = getOptional(objs.ConfigMap, "configmap", s.ConfigMap.Name, ptr.Deref(s.ConfigMap.Optional, false))
			if err == nil {
				err = keyFiles(p, configMapData(cm), s.ConfigMap.Items, &modeP, ptr.Deref(s.ConfigMap.Optional, false), missingConfigMapKey)
			}
		case s.Secret != nil:
			var sec *corev1.Secret
			sec, err = getOptional(objs.Secret, "secret", s.Secret.Name, ptr.Deref(s.Secret.Optional, false))
			if err == nil {
				var data map[string][]byte
				if sec != nil {
					data = sec.Data
				}
				err = keyFiles(p, data, s.Secret.Items, &modeP, ptr.Deref(s.Secret.Optional, false), missingSecretKey)
			}
		case s.DownwardAPI != nil:
			err = downwardAPIFiles(p, pod, s.DownwardAPI.Items, &modeP, objs.Allocatable)
		case s.ServiceAccountToken != nil:
			t := s.ServiceAccountToken
			if err = checkRelative(t.Path); err != nil {
				break
			}
			var tok string
			if tok, err = objs.Token(t); err == nil {
				p[path.Clean(t.Path)] = owned([]byte(tok))
			}
		case s.ClusterTrustBundle != nil:
			if err = checkRelative(s.ClusterTrustBundle.Path); err != nil {
				break
			}
			var anchors []byte
			if anchors, err = trustBundleAnchors(s.ClusterTrustBundle, objs); err == nil {
				p[path.Clean(s.ClusterTrustBundle.Path)] = owned(anchors)
			}
		case s.PodCertificate != nil:
			err = podCertificateFiles(p, s.PodCertificate, owned, func() ([]byte, []byte, error) {
				return objs.PodCertificate(volume, i, s.PodCertificate)
			})
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return p, nil
}

// podCertificateFiles adds a podCertificate source's files to p: the
// key and chain in one credential bundle, and/or each on its own.
func podCertificateFiles(p payload, src *corev1.PodCertificateProjection, owned func([]byte) atomicwriter.File, credentials func() ([]byte, []byte, error)) error {
	for _, f := range []string{src.CredentialBundlePath, src.KeyPath, src.CertificateChainPath} {
		if f != "" {
			if err := checkRelative(f); err != nil {
				return err
			}
		}
	}
	key, chain, err := credentials()
	if err != nil {
		return err
	}
	if f := src.CredentialBundlePath; f != "" {
		p[path.Clean(f)] = owned(slices.Concat(key, chain))
	}
	if f := src.KeyPath; f != "" {
		p[path.Clean(f)] = owned(key)
	}
	if f := src.CertificateChainPath; f != "" {
		p[path.Clean(f)] = owned(chain)
	}
	return nil
}

// joinErrors is upstream's aggregate error text: one error as itself,
// several as "[a, b]".
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("[" + strings.Join(msgs, ", ") + "]")
}

// checkRelative rejects a path that is absolute or leaves its directory.
func checkRelative(p string) error {
	if p == "" || path.IsAbs(p) {
		return fmt.Errorf("path %q must be relative", p)
	}
	if slices.Contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("path %q must not contain '..'", p)
	}
	return nil
}

// readOnlyVolume reports whether v's content comes from the API or is an
// image, so that it is always mounted read-only (as upstream does).
func readOnlyVolume(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || v.Image != nil
}

// onTmpfs reports whether the agent puts volume v on a tmpfs of its own.
func onTmpfs(v *corev1.Volume) bool {
	return v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil ||
		(v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory)
}

// ContainerMounts are c's mounts, given where each of the pod's volumes
// is on the host and c's environment (for subPathExpr, whose $(VAR)
// references expand as upstream's). A subPath of a volume the atomic
// writer keeps names a symlink into its current version; the runtime
// resolves it when the container is created, so (as upstream) such a
// mount does not see later updates.
func ContainerMounts(pod *corev1.Pod, c *corev1.Container, hostPaths map[string]string, vars []env.Var) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		hp, ok := hostPaths[m.Name]
		if i < 0 || !ok {
			return nil, fmt.Errorf("volume mount %q: no such volume", m.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = env.Expand(m.SubPathExpr, vars)
			if sub == "" {
				return nil, fmt.Errorf("volume mount %q: subPathExpr %q expands to nothing", m.Name, m.SubPathExpr)
			}
		}
		if sub != "" {
			if err := checkRelative(sub); err != nil {
				return nil, fmt.Errorf("volume mount %q subPath: %w", m.Name, err)
			}
			hp = filepath.Join(hp, filepath.FromSlash(sub))
		}
		v := &pod.Spec.Volumes[i]
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      hp,
			Readonly:      m.ReadOnly || readOnlyVolume(v) || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly),
		})
	}
	return mounts, nil
}

// memoryVolumeSize is the size of a memory-backed emptyDir, as upstream:
// the node's allocatable memory, or less the pod's memory limit, or less
// the volume's sizeLimit.
func memoryVolumeSize(pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource, allocatable resource.Quantity) resource.Quantity {
	size := allocatable
	if lim, ok := podMemoryLimit(pod); ok && lim.Sign() > 0 && (size.IsZero() || lim.Cmp(size) <= 0) {
		size = lim
	}
	if ed.SizeLimit != nil && ed.SizeLimit.Sign() > 0 && (size.IsZero() || ed.SizeLimit.Cmp(size) <= 0) {
		size = *ed.SizeLimit
	}
	return size
}

// podMemoryLimit is the pod's memory limit when every container has one:
// the larger of the containers' sum (sidecars included) and the largest
// init container's.
func podMemoryLimit(pod *corev1.Pod) (resource.Quantity, bool) {
	var sum, initMax resource.Quantity
	for _, c := range pod.Spec.Containers {
		l, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		sum.Add(l)
	}
	for _, c := range pod.Spec.InitContainers {
		l, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		if podutil.IsSidecar(&c) {
			sum.Add(l)
		} else if l.Cmp(initMax) > 0 {
			initMax = l
		}
	}
	if initMax.Cmp(sum) > 0 {
		return initMax, true
	}
	return sum, true
}

// mountTmpfs mounts a tmpfs on dir unless one is there. Without the
// privilege to mount (tests as non-root) dir stays a directory.
func mountTmpfs(dir string, mode fs.FileMode, size int64) {
	if isMountPoint(dir) {
		return
	}
	opts := fmt.Sprintf("mode=%o", mode.Perm())
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	_ = syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts)
}

// isMountPoint reports whether dir is the root of a mount: by statx's
// mount-root attribute (which also sees a bind mount from the same file
// system, as an image volume can be), else by being on another device
// than its parent.
func isMountPoint(dir string) bool {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, 0, &stx); err == nil && stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

func setupEmptyDir(dir string, pod *corev1.Pod, ed *corev1.EmptyDirVolumeSource, allocatableMemory resource.Quantity) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if ed.Medium == corev1.StorageMediumMemory {
		size := memoryVolumeSize(pod, ed, allocatableMemory)
		mountTmpfs(dir, 0o777, size.Value())
	} else if ed.Medium != corev1.StorageMediumDefault {
		return fmt.Errorf("emptyDir medium %q is not supported", ed.Medium)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // as upstream: any user may write
		return err
	}
	return setOwnership(dir, fsGroup(pod), false)
}

func fsGroup(pod *corev1.Pod) *int64 {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	return pod.Spec.SecurityContext.FSGroup
}

// setOwnership is upstream's fsGroup ownership of a volume: everything
// under dir gets group gid and group read (and write unless readOnly)
// permission; directories get the setgid bit and group search.
func setOwnership(dir string, gid *int64, readOnly bool) error {
	if gid == nil {
		return nil
	}
	mask := fs.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, -1, int(*gid)); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if d.IsDir() {
			m |= fs.ModeSetgid | 0o110
		}
		return os.Chmod(p, fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)|m)
	})
}

func setupHostPath(hp *corev1.HostPathVolumeSource) error {
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	fi, err := os.Stat(hp.Path)
	switch t {
	case corev1.HostPathUnset:
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if err != nil {
			return os.MkdirAll(hp.Path, 0o755)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", hp.Path)
		}
		return nil
	case corev1.HostPathFileOrCreate:
		if err != nil {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", hp.Path)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostPath type check failed: %w", err)
	}
	want := map[corev1.HostPathType]func(fs.FileMode) bool{
		corev1.HostPathDirectory: fs.FileMode.IsDir,
		corev1.HostPathFile:      fs.FileMode.IsRegular,
		corev1.HostPathSocket:    func(m fs.FileMode) bool { return m&fs.ModeSocket != 0 },
		corev1.HostPathCharDev:   func(m fs.FileMode) bool { return m&fs.ModeCharDevice != 0 },
		corev1.HostPathBlockDev:  func(m fs.FileMode) bool { return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0 },
	}[t]
	if want == nil {
		return fmt.Errorf("unknown hostPath type %q", t)
	}
	if !want(fi.Mode()) {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", hp.Path, t)
	}
	return nil
}

// volumePayload is the files of a volume the atomic writer keeps, and
// whether v is one.
func volumePayload(pod *corev1.Pod, v *corev1.Volume, objs volumeObjects) (payload, bool, error) {
	var p payload
	var err error
	switch {
	case v.ConfigMap != nil:
		p, err = configMapPayload(v.ConfigMap, objs)
	case v.Secret != nil:
		p, err = secretPayload(v.Secret, objs)
	case v.DownwardAPI != nil:
		p = payload{}
		err = downwardAPIFiles(p, pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, objs.Allocatable)
	case v.Projected != nil:
		p, err = projectedPayload(pod, v.Name, v.Projected, objs)
	default:
		return nil, false, nil
	}
	return p, true, err
}

// writeVolume sets up a configMap, secret, downwardAPI or projected
// volume at dir with its payload.
func writeVolume(dir string, pod *corev1.Pod, v *corev1.Volume, p payload) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if onTmpfs(v) {
		mountTmpfs(dir, 0o755, 0)
	}
	w := &atomicwriter.Writer{Dir: dir}
	if gid := fsGroup(pod); gid != nil {
		w.SetPerms = func(ts string) error { return setOwnership(ts, gid, true) }
	}
	_, err := w.Write(p)
	return err
}

// diskUsage is the space the files under dir take on its file system,
// as du counts it (blocks), not crossing into other mounts.
func diskUsage(dir string) (int64, error) {
	var root syscall.Stat_t
	if err := syscall.Lstat(dir, &root); err != nil {
		return 0, err
	}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return nil
		}
		if st.Dev != root.Dev {
			return filepath.SkipDir
		}
		total += st.Blocks * 512
		return nil
	})
	return total, err
}
