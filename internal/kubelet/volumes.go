package kubelet

import (
	"context"
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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Volumes. Each volume of a pod that the agent provides itself (emptyDir,
// configMap, secret) is a directory <DataDir>/volumes/<pod uid>/<volume>;
// a hostPath volume is its host path. Containers get them as CRI bind
// mounts. The layout decisions (which files a configMap or secret volume
// holds, with which modes; which mounts a container gets) are the pure
// functions keyFiles and containerMounts; setupVolumes and cleanupVolumes
// do the I/O.

// defaultFileMode is the mode of configMap and secret files when the
// volume names none (the API defaults defaultMode to it too).
const defaultFileMode = 0o644

// volumeFile is one file of a configMap or secret volume.
type volumeFile struct {
	Path string // relative to the volume
	Data []byte
	Mode fs.FileMode
}

// keyFiles are the files of a volume made of data (a ConfigMap's or a
// Secret's): every key as a file, or with items only those keys at their
// paths. A missing key in items is an error unless the volume is
// optional.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool, what string) ([]volumeFile, error) {
	mode := fs.FileMode(defaultFileMode)
	if defaultMode != nil {
		mode = fs.FileMode(*defaultMode) & fs.ModePerm
	}
	var files []volumeFile
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			files = append(files, volumeFile{Path: k, Data: data[k], Mode: mode})
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		if err := checkRelative(it.Path); err != nil {
			return nil, fmt.Errorf("%s item %q: %w", what, it.Key, err)
		}
		m := mode
		if it.Mode != nil {
			m = fs.FileMode(*it.Mode) & fs.ModePerm
		}
		files = append(files, volumeFile{Path: path.Clean(it.Path), Data: v, Mode: m})
	}
	return files, nil
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

// readOnlyVolume reports whether v's content comes from the API, so that
// it is always mounted read-only (as upstream does).
func readOnlyVolume(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// containerMounts are c's mounts, given where each of the pod's volumes
// is on the host.
func containerMounts(pod *corev1.Pod, c *corev1.Container, hostPaths map[string]string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		hp, ok := hostPaths[m.Name]
		if i < 0 || !ok {
			return nil, fmt.Errorf("volume mount %q: no such volume", m.Name)
		}
		if m.SubPathExpr != "" {
			return nil, fmt.Errorf("volume mount %q: subPathExpr is not supported yet", m.Name)
		}
		if m.SubPath != "" {
			if err := checkRelative(m.SubPath); err != nil {
				return nil, fmt.Errorf("volume mount %q subPath: %w", m.Name, err)
			}
			hp = filepath.Join(hp, filepath.FromSlash(m.SubPath))
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      hp,
			Readonly:      m.ReadOnly || readOnlyVolume(&pod.Spec.Volumes[i]),
		})
	}
	return mounts, nil
}

// volumesDir is where the agent keeps pod uid's volumes.
func (a *Agent) volumesDir(uid types.UID) string {
	return filepath.Join(a.opts.DataDir, "volumes", string(uid))
}

// setupVolumes makes (or refreshes) the pod's volumes on the host and
// returns where each is. ConfigMap and Secret volumes are rewritten from
// the API each time: a container started later sees the current data.
func (a *Agent) setupVolumes(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	paths := map[string]string{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(a.volumesDir(pod.UID), v.Name)
		var err error
		switch {
		case v.EmptyDir != nil:
			err = setupEmptyDir(dir, v.EmptyDir)
		case v.HostPath != nil:
			dir = v.HostPath.Path
			err = setupHostPath(v.HostPath)
		case v.ConfigMap != nil:
			err = a.writeConfigMap(ctx, pod, dir, v.ConfigMap)
		case v.Secret != nil:
			err = a.writeSecret(ctx, pod, dir, v.Secret)
		default:
			continue // not supported yet: a mount of it fails
		}
		if err != nil {
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		paths[v.Name] = dir
	}
	return paths, nil
}

func setupEmptyDir(dir string, ed *corev1.EmptyDirVolumeSource) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil { // as upstream: any user may write
		return err
	}
	if ed.Medium != corev1.StorageMediumMemory || isMountPoint(dir) {
		return nil
	}
	opts := "mode=0777"
	if ed.SizeLimit != nil && !ed.SizeLimit.IsZero() {
		opts += fmt.Sprintf(",size=%d", ed.SizeLimit.Value())
	}
	// Without the privilege to mount, a memory emptyDir is a directory.
	_ = syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts)
	return nil
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
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

func (a *Agent) writeConfigMap(ctx context.Context, pod *corev1.Pod, dir string, src *corev1.ConfigMapVolumeSource) error {
	cm, err := a.cs.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	var data map[string][]byte
	switch {
	case apierrors.IsNotFound(err) && optional(src.Optional):
	case err != nil:
		return fmt.Errorf("configmap %q: %w", src.Name, err)
	default:
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		maps.Copy(data, cm.BinaryData)
	}
	files, err := keyFiles(data, src.Items, src.DefaultMode, optional(src.Optional), "configmap "+src.Name)
	if err != nil {
		return err
	}
	return writeFiles(dir, files)
}

func (a *Agent) writeSecret(ctx context.Context, pod *corev1.Pod, dir string, src *corev1.SecretVolumeSource) error {
	s, err := a.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, src.SecretName, metav1.GetOptions{})
	var data map[string][]byte
	switch {
	case apierrors.IsNotFound(err) && optional(src.Optional):
	case err != nil:
		return fmt.Errorf("secret %q: %w", src.SecretName, err)
	default:
		data = s.Data
	}
	files, err := keyFiles(data, src.Items, src.DefaultMode, optional(src.Optional), "secret "+src.SecretName)
	if err != nil {
		return err
	}
	return writeFiles(dir, files)
}

// writeFiles makes dir hold exactly files: each written to a temporary
// name and renamed into place, and files no longer there removed.
func writeFiles(dir string, files []volumeFile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		keep[p] = true
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(p), ".tmp-"+filepath.Base(p))
		if err := os.WriteFile(tmp, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.Mode); err != nil { // not masked by the umask
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || keep[p] {
			return err
		}
		return os.Remove(p)
	})
}

// cleanupVolumes removes the pod's volume directories, unmounting the
// memory-backed ones first.
func (a *Agent) cleanupVolumes(uid types.UID) error {
	dir := a.volumesDir(uid)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if isMountPoint(p) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				return fmt.Errorf("unmounting %s: %w", p, err)
			}
		}
	}
	return os.RemoveAll(dir)
}

// cleanupOrphanVolumes removes the volumes of pods that are not live and
// whose directories have not changed for a minute (so that a pod the
// caller did not see yet keeps its new ones).
func (a *Agent) cleanupOrphanVolumes(live map[types.UID]bool) {
	root := filepath.Join(a.opts.DataDir, "volumes")
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		uid := types.UID(e.Name())
		if live[uid] {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if err := a.cleanupVolumes(uid); err != nil {
			a.log.Warn("removing volumes of a pod that is gone", "uid", uid, "err", err)
		}
	}
}
