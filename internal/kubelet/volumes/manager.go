package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"plainkube.dev/plainkube/internal/image"
	"plainkube.dev/plainkube/internal/kubelet/env"
	"plainkube.dev/plainkube/internal/kubelet/events"
)

// The volume manager: when a pod's volumes are set up and refreshed.
// A pod's volumes are all set up before its sandbox starts (as upstream's
// WaitForAttachAndMount). While one cannot be (a ConfigMap or Secret
// that is missing and not optional, a token the API refuses), the pod
// stays Pending with its containers in ContainerCreating, a FailedMount
// Warning event says why, and the set-up is retried with a back-off
// (1s doubling to 8s); every 2m3s of waiting another FailedMount event
// says "Unable to attach or mount volumes: unmounted volumes=[…]…", as
// upstream's. Once running, the volumes whose content comes from
// the API (configMap, secret, downwardAPI, projected) are rewritten every
// VolumeResyncInterval, and at once when the pod's labels or
// annotations change; the atomic writer makes an update appear all at
// once, and only if something changed. A refresh that fails keeps the
// old content and reports a FailedMount event. Disk emptyDirs with a
// sizeLimit are measured every emptyDirCheckInterval (10s, as
// upstream's eviction manager; VolumeResyncInterval if shorter); a pod whose
// emptyDir exceeds its limit is evicted, as upstream's eviction manager
// does.

const (
	mountRetryInitial     = time.Second
	mountRetryMax         = 8 * time.Second
	emptyDirCheckInterval = 10 * time.Second
)

// Manager sets up, refreshes and removes the volumes of the node's pods,
// and holds their state. It is safe for concurrent use by the agent's
// workers (one pod at a time each).
type Manager struct {
	cfg    Config
	mu     sync.Mutex
	pods   map[types.UID]*podVolumes
	tokens tokenCache
	certs  podCertificateCache
}

// Config is what a Manager works with.
type Config struct {
	// Dir holds a directory of volumes per pod (<DataDir>/volumes).
	Dir string
	// Client reads ConfigMaps, Secrets and ClusterTrustBundles, asks for
	// tokens and requests pod certificates, as node NodeName.
	Client   kubernetes.Interface
	NodeName string
	// ResyncInterval is how often the volumes from the API are rewritten.
	ResyncInterval time.Duration
	// Allocatable is the node's, for limits that containers do not set.
	Allocatable corev1.ResourceList
	Events      *events.Recorder
	Logger      *slog.Logger
	// Images mounts the images of image volumes (image.Mounter); without
	// it a pod with an image volume waits for it with FailedMount.
	Images ImageMounter
}

// ImageMounter mounts an image's root file system read-only on a host
// directory and unmounts it again (image.Mounter, over the node's
// containerd).
type ImageMounter interface {
	Mount(ctx context.Context, ref, dir string) error
	Unmount(ctx context.Context, dir string) error
}

// NewManager makes a volume manager; it holds no pod yet.
func NewManager(cfg Config) *Manager { return &Manager{cfg: cfg} }

// podVolumes is the state of one pod's volumes.
type podVolumes struct {
	paths     map[string]string // every volume, once all are set up
	refreshed time.Time         // when API content was last read
	meta      string            // labels and annotations then
	usage     time.Time         // when emptyDir usage was last measured
	retryAt   time.Time         // set-up failed: not before then
	backoff   time.Duration
	err       error
	waitSince time.Time // the pod has waited for its volumes since then
}

// mountTimeout is how long upstream's kubelet waits for a pod's volumes
// before it reports that it timed out (and waits again).
const mountTimeout = 2*time.Minute + 3*time.Second

// mountTimeoutMessage is upstream's event message when a pod's volumes
// were not all set up within mountTimeout.
func mountTimeoutMessage(unmounted []string) string {
	slices.Sort(unmounted)
	return fmt.Sprintf("Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=[], failed to process volumes=[]: %v",
		unmounted, context.DeadlineExceeded)
}

func (m *Manager) state(uid types.UID) *podVolumes {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pods == nil {
		m.pods = map[types.UID]*podVolumes{}
	}
	pv := m.pods[uid]
	if pv == nil {
		pv = &podVolumes{}
		m.pods[uid] = pv
	}
	return pv
}

// forget drops what the manager holds of the pods not in live (nil: of
// uid only).
func (m *Manager) forget(uid types.UID, live map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.pods {
		if (live == nil && k == uid) || (live != nil && !live[k]) {
			delete(m.pods, k)
		}
	}
	m.tokens.forget(uid, live)
	m.certs.forget(uid, live)
}

// podMeta is what of a pod's metadata its downward API files show.
func podMeta(pod *corev1.Pod) string {
	labels, _ := env.PodField(pod, "metadata.labels", env.Source{})
	annotations, _ := env.PodField(pod, "metadata.annotations", env.Source{})
	return labels + "\x00" + annotations
}

// Setup sets up the pod's volumes when they are not yet, refreshes
// the ones from the API when due, and returns where each volume is on
// the host. An error means they are not all set up: RetryAt says when
// Setup tries again.
func (m *Manager) Setup(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	pv := m.state(pod.UID)
	now := time.Now()
	if pv.paths == nil && now.Before(pv.retryAt) {
		return nil, pv.err
	}
	due := pv.paths == nil || now.Sub(pv.refreshed) >= m.cfg.ResyncInterval || pv.meta != podMeta(pod)
	if !due {
		return pv.paths, nil
	}
	paths, errs := m.writeVolumes(ctx, pod, pv.paths != nil)
	for _, e := range errs {
		m.cfg.Events.Record(pod, "", corev1.EventTypeWarning, "FailedMount", "%s", e.Error())
		m.cfg.Logger.Warn("volume set-up", "pod", pod.Namespace+"/"+pod.Name, "err", e)
	}
	if pv.paths != nil {
		// A refresh: failures keep the old content.
		pv.refreshed, pv.meta = now, podMeta(pod)
		return pv.paths, nil
	}
	if len(errs) > 0 {
		pv.backoff = min(max(2*pv.backoff, mountRetryInitial), mountRetryMax)
		pv.retryAt, pv.err = now.Add(pv.backoff), errors.Join(errs...)
		if pv.waitSince.IsZero() {
			pv.waitSince = now
		} else if now.Sub(pv.waitSince) >= mountTimeout {
			var unmounted []string
			for _, e := range errs {
				if me := (*mountError)(nil); errors.As(e, &me) {
					unmounted = append(unmounted, me.Volume)
				} else if ce := (*claimError)(nil); errors.As(e, &ce) {
					unmounted = append(unmounted, ce.Volume)
				}
			}
			m.cfg.Events.Record(pod, "", corev1.EventTypeWarning, "FailedMount", "%s", mountTimeoutMessage(unmounted))
			pv.waitSince = now
		}
		return nil, pv.err
	}
	pv.paths, pv.refreshed, pv.meta, pv.backoff, pv.err, pv.waitSince = paths, now, podMeta(pod), 0, nil, time.Time{}
	return pv.paths, nil
}

// mountError is upstream's FailedMount message for one volume.
type mountError struct {
	Volume string
	Err    error
}

func (e *mountError) Error() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

// writeVolumes sets up every volume of pod (only the API-backed ones
// when refresh), and says where each is.
func (m *Manager) writeVolumes(ctx context.Context, pod *corev1.Pod, refresh bool) (map[string]string, []error) {
	objs := m.volumeObjects(ctx, pod)
	paths := map[string]string{}
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(m.podDir(pod.UID), v.Name)
		p, fromAPI, err := volumePayload(pod, v, objs)
		switch {
		case fromAPI && err == nil:
			err = writeVolume(dir, pod, v, p)
		case fromAPI || refresh:
		case v.EmptyDir != nil:
			err = setupEmptyDir(dir, pod, v.EmptyDir, objs.Allocatable[corev1.ResourceMemory])
		case v.HostPath != nil:
			dir = v.HostPath.Path
			err = setupHostPath(v.HostPath)
		case v.PersistentVolumeClaim != nil:
			claim, pv, cerr := claimedVolume(pod, v, objs)
			if cerr != nil {
				errs = append(errs, cerr)
				continue
			}
			dir, err = setupPersistentVolume(pod, claim, pv, v.PersistentVolumeClaim.ReadOnly)
		case v.Image != nil:
			err = m.setupImage(ctx, dir, v.Image)
		default:
			continue // not supported: a mount of it fails
		}
		if err != nil {
			errs = append(errs, &mountError{v.Name, err})
			continue
		}
		paths[v.Name] = dir
	}
	return paths, errs
}

// volumeObjects reads what pod's volumes refer to through the API, each
// object at most once per set-up.
func (m *Manager) volumeObjects(ctx context.Context, pod *corev1.Pod) volumeObjects {
	cms := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	return volumeObjects{
		ConfigMap: func(name string) (*corev1.ConfigMap, error) {
			if cm, ok := cms[name]; ok {
				return cm, nil
			}
			cm, err := m.cfg.Client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				cms[name] = cm
			}
			return cm, err
		},
		Secret: func(name string) (*corev1.Secret, error) {
			if s, ok := secrets[name]; ok {
				return s, nil
			}
			s, err := m.cfg.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				secrets[name] = s
			}
			return s, err
		},
		Claim: func(name string) (*corev1.PersistentVolumeClaim, error) {
			return m.cfg.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		},
		Volume: func(name string) (*corev1.PersistentVolume, error) {
			return m.cfg.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		},
		Token: func(t *corev1.ServiceAccountTokenProjection) (string, error) {
			return m.tokens.token(ctx, m.cfg.Client, pod, t, time.Now())
		},
		TrustBundle: func(name string) (*certificatesv1.ClusterTrustBundle, error) {
			return m.cfg.Client.CertificatesV1().ClusterTrustBundles().Get(ctx, name, metav1.GetOptions{})
		},
		TrustBundles: func(signerName string) ([]certificatesv1.ClusterTrustBundle, error) {
			l, err := m.cfg.Client.CertificatesV1().ClusterTrustBundles().List(ctx, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("spec.signerName", signerName).String()})
			if err != nil {
				return nil, err
			}
			return l.Items, nil
		},
		PodCertificate: func(volume string, index int, src *corev1.PodCertificateProjection) ([]byte, []byte, error) {
			return m.certs.credentials(ctx, podCertificateRequester{m.cfg.Client, m.cfg.NodeName}, pod, volume, index, src, time.Now())
		},
		Allocatable: m.cfg.Allocatable,
	}
}

// RetryAt is when Setup tries again to set up the volumes of pod uid,
// after it failed.
func (m *Manager) RetryAt(uid types.UID) time.Time { return m.state(uid).retryAt }

// OverLimit measures the pod's disk emptyDirs when due (every
// emptyDirCheckInterval, or ResyncInterval if shorter) and returns
// upstream's eviction message when one uses more than its sizeLimit,
// else "".
func (m *Manager) OverLimit(pod *corev1.Pod) string {
	pv := m.state(pod.UID)
	if time.Since(pv.usage) < min(emptyDirCheckInterval, m.cfg.ResyncInterval) {
		return ""
	}
	pv.usage = time.Now()
	return m.emptyDirOverLimit(pod)
}

// emptyDirOverLimit is upstream's eviction message when one of the pod's
// disk emptyDirs uses more than its sizeLimit, else "".
func (m *Manager) emptyDirOverLimit(pod *corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium == corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		used, err := diskUsage(filepath.Join(m.podDir(pod.UID), v.Name))
		if err == nil && used > ed.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", v.Name, ed.SizeLimit.String())
		}
	}
	return ""
}

// podDir is where the manager keeps pod uid's volumes.
func (m *Manager) podDir(uid types.UID) string {
	return filepath.Join(m.cfg.Dir, string(uid))
}

// setupImage mounts the image of an image volume on dir, unless it is
// already. plainkube nodes pull nothing, so whatever the pull policy the
// image has to be on the node (imported with plainkube image load).
func (m *Manager) setupImage(ctx context.Context, dir string, src *corev1.ImageVolumeSource) error {
	if isMountPoint(dir) {
		return nil
	}
	if m.cfg.Images == nil {
		return errors.New("image volumes are not supported by this node")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := m.cfg.Images.Mount(ctx, src.Reference, dir)
	if errors.Is(err, image.ErrNotPresent) {
		return fmt.Errorf("image %q is not present on the node, and plainkube nodes do not pull images: import it with `plainkube image load`", src.Reference)
	}
	return err
}

// Cleanup removes the pod's volume directories, unmounting the
// memory-backed and image ones first, and forgets its volume state and
// tokens.
func (m *Manager) Cleanup(uid types.UID) error {
	m.forget(uid, nil)
	dir := m.podDir(uid)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !isMountPoint(p) {
			continue
		}
		// What is mounted in a pod's volume directory is a tmpfs the
		// manager made or an image (whose snapshot goes with it).
		var st syscall.Statfs_t
		if err := syscall.Statfs(p, &st); err == nil && st.Type != tmpfsMagic && m.cfg.Images != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := m.cfg.Images.Unmount(ctx, p)
			cancel()
			if err != nil {
				return fmt.Errorf("unmounting image volume %s: %w", p, err)
			}
			continue
		}
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s: %w", p, err)
		}
	}
	return os.RemoveAll(dir)
}

// tmpfsMagic is statfs's type of a tmpfs.
const tmpfsMagic = 0x01021994

// CleanupOrphans removes the volumes of pods that are not live and
// whose directories have not changed for a minute (so that a pod the
// caller did not see yet keeps its new ones), and forgets their state.
func (m *Manager) CleanupOrphans(live map[types.UID]bool) {
	m.forget("", live)
	root := m.cfg.Dir
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		uid := types.UID(e.Name())
		if live[uid] || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		if err := m.Cleanup(uid); err != nil {
			m.cfg.Logger.Warn("removing volumes of a pod that is gone", "uid", uid, "err", err)
		}
	}
}
