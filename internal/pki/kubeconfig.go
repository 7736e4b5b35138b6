package pki

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used in kubeconfigs written by WriteKubeconfig.
const (
	KubeconfigCluster = "plainkube"
	KubeconfigUser    = "admin"
	KubeconfigContext = "plainkube"
)

// WriteKubeconfig writes a kubeconfig to path with cluster "plainkube"
// (serverURL, CA data), user "admin" (client certificate and key data) and
// context "plainkube", which is current. The file is replaced atomically with
// mode 0600; a missing parent directory is created 0700.
func WriteKubeconfig(path, serverURL string, caPEM, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigCluster] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[KubeconfigUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:  KubeconfigCluster,
		AuthInfo: KubeconfigUser,
	}
	cfg.CurrentContext = KubeconfigContext
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: encoding kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return writeFile(path, data, 0o600)
}
