// Command nettool is the end-to-end tests' network client and server, run
// in pods (built with CGO_ENABLED=0, so that its resolver is Go's own,
// which reads the pod's resolv.conf with its search list and ndots).
//
//	nettool serve -port 8080 [-udp-port 9090]
//	                                HTTP (and UDP): answers its host name; on SIGTERM keeps serving 2s, then exits
//	nettool udp [-n N] [-interval D] [-local-port P] HOST:PORT
//	                                N datagrams from one source port; prints each answer ("timeout" for none)
//	nettool get [-n N] [-interval D] [-keep-going] [-keep-alive] URL
//	                                N requests, each on a new connection (-keep-alive: all on one);
//	                                prints each answer, and "failed: N" with -keep-going
//	nettool lookup [-type A|SRV|PTR|CNAME] NAME
//	nettool connect HOST:PORT       a TCP connection
//	nettool pause                   sleeps until killed
//	nettool webhook -port 8443 -cert FILE -key FILE
//	                                HTTPS admission webhook: denies objects labelled e2e-deny=yes
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nettool serve|get|lookup|pause ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "get":
		err = get(os.Args[2:])
	case "udp":
		err = udp(os.Args[2:])
	case "lookup":
		err = lookup(os.Args[2:])
	case "connect":
		var conn net.Conn
		if conn, err = net.DialTimeout("tcp", os.Args[len(os.Args)-1], 5*time.Second); err == nil {
			fmt.Println("connected to", conn.RemoteAddr())
			conn.Close()
		}
	case "webhook":
		err = webhook(os.Args[2:])
	case "pause":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nettool:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	port := fs.Int("port", 8080, "port")
	udpPort := fs.Int("udp-port", 0, "also answer datagrams on this UDP port")
	fs.Parse(args)
	host, _ := os.Hostname()
	if *udpPort != 0 {
		pc, err := net.ListenPacket("udp", fmt.Sprintf(":%d", *udpPort))
		if err != nil {
			return err
		}
		go func() {
			buf := make([]byte, 512)
			for {
				_, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				pc.WriteTo([]byte(host+"\n"), from)
			}
		}()
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", *port))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/source" {
			h, _, _ := net.SplitHostPort(r.RemoteAddr)
			fmt.Fprintln(w, h)
			return
		}
		fmt.Fprintln(w, host)
	})}
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		// Serve on while the endpoint is taken out of the Services.
		time.Sleep(2 * time.Second)
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	n := fs.Int("n", 1, "requests")
	interval := fs.Duration("interval", 0, "pause between requests")
	keepGoing := fs.Bool("keep-going", false, "count failures instead of stopping at the first")
	timeout := fs.Duration("timeout", 3*time.Second, "per request")
	keepAlive := fs.Bool("keep-alive", false, "one connection for every request (a new one only when it breaks)")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("get: one URL")
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{DisableKeepAlives: !*keepAlive, MaxConnsPerHost: 1}}
	failed := 0
	for i := 0; i < *n; i++ {
		if i > 0 {
			time.Sleep(*interval)
		}
		resp, err := client.Get(fs.Arg(0))
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			if err == nil {
				fmt.Print(string(b))
			}
		}
		if err != nil {
			if !*keepGoing {
				return err
			}
			fmt.Fprintln(os.Stderr, "request", i, err)
			failed++
		}
	}
	if *keepGoing {
		fmt.Printf("failed: %d\n", failed)
	}
	return nil
}

func udp(args []string) error {
	fs := flag.NewFlagSet("udp", flag.ExitOnError)
	n := fs.Int("n", 1, "datagrams")
	interval := fs.Duration("interval", 0, "pause between datagrams")
	localPort := fs.Int("local-port", 0, "source port (0: any)")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("udp: one HOST:PORT")
	}
	raddr, err := net.ResolveUDPAddr("udp", fs.Arg(0))
	if err != nil {
		return err
	}
	conn, err := net.DialUDP("udp", &net.UDPAddr{Port: *localPort}, raddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, 512)
	for i := 0; i < *n; i++ {
		if i > 0 {
			time.Sleep(*interval)
		}
		if _, err := conn.Write([]byte("hello")); err != nil {
			fmt.Println("error")
			continue
		}
		conn.SetReadDeadline(time.Now().Add(time.Second))
		m, err := conn.Read(buf)
		if err != nil {
			fmt.Println("timeout")
			continue
		}
		fmt.Print(string(buf[:m]))
	}
	return nil
}

func lookup(args []string) error {
	fs := flag.NewFlagSet("lookup", flag.ExitOnError)
	typ := fs.String("type", "A", "A, SRV, PTR or CNAME")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return fmt.Errorf("lookup: one name")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := net.DefaultResolver
	name := fs.Arg(0)
	switch strings.ToUpper(*typ) {
	case "A":
		addrs, err := r.LookupHost(ctx, name)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(addrs, "\n"))
	case "SRV":
		_, srvs, err := r.LookupSRV(ctx, "", "", name)
		if err != nil {
			return err
		}
		for _, s := range srvs {
			fmt.Printf("%s %d %d %d\n", s.Target, s.Port, s.Priority, s.Weight)
		}
	case "PTR":
		names, err := r.LookupAddr(ctx, name)
		if err != nil {
			return err
		}
		fmt.Println(strings.Join(names, "\n"))
	case "CNAME":
		c, err := r.LookupCNAME(ctx, name)
		if err != nil {
			return err
		}
		fmt.Println(c)
	default:
		return fmt.Errorf("lookup: type %q", *typ)
	}
	return nil
}

// webhook serves AdmissionReviews (admission.k8s.io/v1) over HTTPS at
// every path: an object labelled e2e-deny=yes is refused with a message
// naming it, anything else allowed. Plain JSON, so that nettool needs no
// Kubernetes packages.
func webhook(args []string) error {
	fs := flag.NewFlagSet("webhook", flag.ExitOnError)
	port := fs.Int("port", 8443, "port")
	cert := fs.String("cert", "/tls/tls.crt", "serving certificate (PEM)")
	key := fs.String("key", "/tls/tls.key", "its key (PEM)")
	fs.Parse(args)
	type object struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Request    *struct {
				UID    string `json:"uid"`
				Object object `json:"object"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		resp := map[string]any{"uid": review.Request.UID, "allowed": true}
		if obj := review.Request.Object; obj.Metadata.Labels["e2e-deny"] == "yes" {
			resp["allowed"] = false
			resp["status"] = map[string]any{"code": 403, "message": fmt.Sprintf("nettool webhook refuses %s: it is labelled e2e-deny=yes", obj.Metadata.Name)}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": review.Kind, "response": resp})
	})
	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServeTLS(*cert, *key)
}
