package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/auth"
	"plainkube.dev/plainkube/internal/pki"
	"plainkube.dev/plainkube/internal/server"
)

const tokenUsage = `plainkube token: the bootstrap tokens hosts join the cluster with (as kubeadm token).

  plainkube token create [TOKEN] [--ttl 24h] [--description TEXT] [--print-join-command]
  plainkube token list
  plainkube token delete TOKEN-OR-ID...

Each takes --kubeconfig (default: the admin kubeconfig of --data-dir).
`

// runToken makes, lists and deletes bootstrap tokens through the API.
func runToken(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(tokenUsage)
		return nil
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("token "+verb, flag.ExitOnError)
	dataDir := fs.String("data-dir", server.DefaultDataDir(), "the server's data directory, for its admin.kubeconfig")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of an administrator (default: DATA/admin.kubeconfig)")
	ttl := fs.Duration("ttl", server.DefaultJoinTokenTTL, "how long the token lasts (0: it does not expire)")
	description := fs.String("description", "", "what the token is for")
	printJoin := fs.Bool("print-join-command", false, "print the command that joins a host with the token, not only the token")
	args = parseInterleaved(fs, args)
	if *kubeconfig == "" {
		*kubeconfig = filepath.Join(*dataDir, "admin.kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	secrets := cs.CoreV1().Secrets("kube-system")
	switch verb {
	case "create":
		if len(args) > 1 {
			return errors.New("token create takes at most one token")
		}
		var token string
		if len(args) == 1 {
			token = args[0]
		}
		if token == "" {
			if token, err = auth.NewBootstrapToken(); err != nil {
				return err
			}
		}
		var expires time.Time
		if *ttl > 0 {
			expires = time.Now().Add(*ttl).Truncate(time.Second)
		}
		s, err := auth.BootstrapTokenSecret(token, *description, []string{server.NodeBootstrapGroup}, expires)
		if err != nil {
			return err
		}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("a token with id %q exists already", s.Data[auth.BootstrapTokenIDKey])
			}
			return err
		}
		if !*printJoin {
			fmt.Println(token)
			return nil
		}
		url, caHash, err := clusterInfo(ctx, cs)
		if err != nil {
			return err
		}
		fmt.Println(server.JoinCommand(url, token, caHash))
	case "list":
		list, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 8, 3, ' ', 0)
		fmt.Fprintln(w, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
		for _, s := range list.Items {
			if s.Type == corev1.SecretTypeBootstrapToken {
				fmt.Fprintln(w, tokenRow(&s, time.Now()))
			}
		}
		return w.Flush()
	case "delete":
		if len(args) == 0 {
			return errors.New("token delete needs a token or a token id")
		}
		for _, t := range args {
			id, _, _ := strings.Cut(t, ".")
			if err := secrets.Delete(ctx, auth.BootstrapTokenSecretPrefix+id, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("token %q: %w", id, err)
			}
			fmt.Printf("bootstrap token %q deleted\n", id)
		}
	default:
		return fmt.Errorf("unknown token command %q\n\n%s", verb, tokenUsage)
	}
	return nil
}

// parseInterleaved parses flags given before, between and after the
// positional arguments, and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) []string {
	var positional []string
	for {
		fs.Parse(args)
		if fs.NArg() == 0 {
			return positional
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// tokenRow is a token Secret as a row of `token list`, kubeadm's columns.
func tokenRow(s *corev1.Secret, now time.Time) string {
	d := func(k string) string { return string(s.Data[k]) }
	ttl, expires := "<forever>", "<never>"
	if exp := d(auth.BootstrapTokenExpirationKey); exp != "" {
		expires = exp
		if t, err := time.Parse(time.RFC3339, exp); err != nil || !now.Before(t) {
			ttl = "<invalid>"
		} else {
			ttl = t.Sub(now).Round(time.Second).String()
		}
	}
	var usages []string
	for k, v := range s.Data {
		if u, ok := strings.CutPrefix(k, "usage-bootstrap-"); ok && string(v) == "true" {
			usages = append(usages, u)
		}
	}
	slices.Sort(usages)
	groups := d(auth.BootstrapTokenExtraGroupsKey)
	return strings.Join([]string{d(auth.BootstrapTokenIDKey) + "." + d(auth.BootstrapTokenSecretKey), ttl, expires,
		orNone(strings.Join(usages, ",")), orNone(d(auth.BootstrapTokenDescriptionKey)), orNone(groups)}, "\t")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// clusterInfo reads the server's join address and CA pin from
// kube-public/cluster-info, as a joining host does.
func clusterInfo(ctx context.Context, cs kubernetes.Interface) (url, caHash string, err error) {
	cm, err := cs.CoreV1().ConfigMaps("kube-public").Get(ctx, server.ClusterInfoName, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("cluster-info: %w", err)
	}
	kc, err := clientcmd.Load([]byte(cm.Data[server.ClusterInfoKey]))
	if err != nil {
		return "", "", fmt.Errorf("cluster-info: %w", err)
	}
	for _, c := range kc.Clusters {
		ca, err := pki.ParseCertPEM(c.CertificateAuthorityData)
		if err != nil {
			return "", "", fmt.Errorf("cluster-info CA: %w", err)
		}
		return c.Server, pki.CertHash(ca), nil
	}
	return "", "", errors.New("cluster-info names no cluster")
}
