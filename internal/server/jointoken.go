package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"plainkube.dev/plainkube/internal/auth"
)

// Joining nodes: the server keeps one bootstrap token (in DATA/join-token,
// mode 0600, and as its Secret in kube-system) for `plainkube agent
// --token`, and publishes the cluster's address and CA in the
// kube-public/cluster-info ConfigMap, which a joining agent reads and checks
// against the CA hash it was given.
const (
	// JoinTokenFile is the token's file under the data directory.
	JoinTokenFile = "join-token"
	// NodeBootstrapGroup is the extra group of the join token's user.
	NodeBootstrapGroup = "system:bootstrappers:plainkube"
	// ClusterInfoName is the ConfigMap in kube-public; its "kubeconfig"
	// key holds a kubeconfig with the server and CA, and no user.
	ClusterInfoName = "cluster-info"
	ClusterInfoKey  = "kubeconfig"
	// JoinTokenLabel marks the join token's Secret, so that a token
	// replaced (its file removed) stops working.
	JoinTokenLabel = "plainkube.dev/join-token"
)

// secretGetter reads kube-system Secrets through the API (as cfg's user).
func secretGetter(cfg *rest.Config) (auth.SecretGetter, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, name string) (*corev1.Secret, error) {
		s, err := cs.CoreV1().Secrets("kube-system").Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return s, err
	}, nil
}

// DefaultJoinTokenTTL is how long the join token a server makes at its
// first start lasts, as kubeadm's default token.
const DefaultJoinTokenTTL = 24 * time.Hour

// JoinToken is the server's join token, as ensureJoinToken found it.
type JoinToken struct {
	// Token is "" when the token has expired: a join command then needs a
	// new one (`plainkube token create --print-join-command`).
	Token string
	// Expires is when it stops working (zero: never).
	Expires time.Time
	// New is whether this start made it (the server prints the join
	// command then, and not at later starts).
	New bool
}

// ensureJoinToken returns the token kept in dataDir, making one the first
// time, and makes sure its Secret exists and matches; Secrets of earlier
// join tokens are deleted. The token expires ttl after it was made (the
// file's modification time; ttl 0: never); an expired one is not made
// valid again. It lasts until then or until its file is removed (a restart
// then makes a new one).
func ensureJoinToken(ctx context.Context, cfg *rest.Config, dataDir string, ttl time.Duration) (JoinToken, error) {
	path := filepath.Join(dataDir, JoinTokenFile)
	var jt JoinToken
	b, err := os.ReadFile(path)
	jt.Token = strings.TrimSpace(string(b))
	made := time.Now()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if jt.Token, err = auth.NewBootstrapToken(); err != nil {
			return JoinToken{}, err
		}
		jt.New = true
	case err != nil:
		return JoinToken{}, err
	default:
		st, err := os.Stat(path)
		if err != nil {
			return JoinToken{}, err
		}
		made = st.ModTime()
	}
	if ttl > 0 {
		jt.Expires = made.Add(ttl).Truncate(time.Second)
	}
	want, err := auth.BootstrapTokenSecret(jt.Token, "the token `plainkube agent --token` joins nodes with", []string{NodeBootstrapGroup}, jt.Expires)
	if err != nil {
		return JoinToken{}, fmt.Errorf("%s: %w", path, err)
	}
	want.Labels = map[string]string{JoinTokenLabel: "true"}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return JoinToken{}, err
	}
	secrets := cs.CoreV1().Secrets("kube-system")
	old, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: JoinTokenLabel + "=true"})
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token secrets: %w", err)
	}
	for _, o := range old.Items {
		if o.Name != want.Name {
			if err := secrets.Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return JoinToken{}, fmt.Errorf("removing the replaced join token: %w", err)
			}
		}
	}
	if !jt.Expires.IsZero() && !time.Now().Before(jt.Expires) {
		// Expired: its Secret goes too, and nothing makes it valid again.
		if err := secrets.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return JoinToken{}, fmt.Errorf("removing the expired join token: %w", err)
		}
		return JoinToken{Expires: jt.Expires}, nil
	}
	cur, err := secrets.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return JoinToken{}, fmt.Errorf("join token secret: %w", err)
		}
	case err != nil:
		return JoinToken{}, fmt.Errorf("join token secret: %w", err)
	case cur.Type != want.Type || !sameData(cur.Data, want.Data) || cur.Labels[JoinTokenLabel] != "true":
		// Someone changed or replaced it: the file is the source of truth.
		if err := secrets.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return JoinToken{}, fmt.Errorf("join token secret: %w", err)
		}
		if _, err := secrets.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return JoinToken{}, fmt.Errorf("join token secret: %w", err)
		}
	}
	if jt.New {
		if err := os.WriteFile(path, []byte(jt.Token+"\n"), 0o600); err != nil {
			return JoinToken{}, err
		}
	}
	return jt, os.Chmod(path, 0o600)
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// ensureClusterInfo publishes kube-public/cluster-info: a kubeconfig
// naming the server at url and the cluster CA, as kubeadm does.
func ensureClusterInfo(ctx context.Context, cfg *rest.Config, url string, caPEM []byte) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[""] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: caPEM}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cms := cs.CoreV1().ConfigMaps("kube-public")
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoName, Namespace: "kube-public"},
		Data: map[string]string{ClusterInfoKey: string(data)}}
	return createOrUpdate(ctx, func() error {
		_, err := cms.Create(ctx, want, metav1.CreateOptions{})
		return err
	}, func() error {
		cur, err := cms.Get(ctx, ClusterInfoName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Data[ClusterInfoKey] == want.Data[ClusterInfoKey] {
			return nil
		}
		if cur.Data == nil {
			cur.Data = map[string]string{}
		}
		cur.Data[ClusterInfoKey] = want.Data[ClusterInfoKey]
		_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// JoinCommand is the command that joins another host to this server with
// its join token, or "" when that token has expired.
func (s *Server) JoinCommand() string {
	if s.JoinToken.Token == "" {
		return ""
	}
	return JoinCommand(s.JoinURL, s.JoinToken.Token, s.CAHash)
}

// JoinCommand is the command that joins a host to the server at url with
// token, pinning the CA by caHash.
func JoinCommand(url, token, caHash string) string {
	return fmt.Sprintf("plainkube agent --server %s --token %s --ca-cert-hash %s", url, token, caHash)
}
