// Command goproxy is the Go reverse proxy of scripts/proxy-rig.sh: a
// standard net/http/httputil.ReverseProxy with a keep-alive pool to one
// backend that flushes every write at once (FlushInterval -1), as the
// routers and gateways in front of a fleet are.
//
// It runs each request in full duplex. Without that (-half-duplex, for the
// rig's "before" figure) net/http's server reads the inbound request body to
// its end and closes it when the proxy writes the response headers, while
// the Transport may still be making its final read of that body; the read
// fails, the Transport closes the backend connection and the response being
// copied ends early (golang/go#40747, docs/FAULTS.md "Streams behind a
// reverse proxy").
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18480", "address to listen on")
	backend := flag.String("backend", "http://127.0.0.1:18400", "backend base URL")
	halfDuplex := flag.Bool("half-duplex", false, "do not enable full duplex (reproduces golang/go#40747)")
	flag.Parse()
	u, err := url.Parse(*backend)
	if err != nil || u.Host == "" {
		fmt.Fprintf(os.Stderr, "goproxy: bad -backend %q\n", *backend)
		os.Exit(2)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	rp.ErrorLog = log.New(os.Stderr, "goproxy: ", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		log.Printf("goproxy: %v", err)
		w.WriteHeader(http.StatusBadGateway)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !*halfDuplex {
			_ = http.NewResponseController(w).EnableFullDuplex()
		}
		rp.ServeHTTP(w, r)
	})
	srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintf(os.Stderr, "goproxy: %v\n", err)
		os.Exit(1)
	}
}
