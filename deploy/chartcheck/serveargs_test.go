package chartcheck

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/mocker-server/mocker-server/internal/config"
)

// podIdentity stands in for what the kubelet fills in for a running pod.
type podIdentity struct {
	name   string // metadata.name
	ip     string // status.podIP
	secret string // the value of any secretKeyRef
}

var testPod = podIdentity{name: "mocker-server-7d9f8-abcde", ip: "10.1.2.3", secret: "sk-test"}

// containerEnv resolves a container's environment the way the kubelet does
// for the sources this chart uses: literal values, the downward API's
// metadata.name and status.podIP, and Secret keys.
func containerEnv(c corev1.Container, pod podIdentity) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandKubernetes(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = pod.name
			case "status.podIP":
				env[e.Name] = pod.ip
			default:
				return nil, fmt.Errorf("env %s: unexpected fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			env[e.Name] = pod.secret
		default:
			return nil, fmt.Errorf("env %s: unexpected value source", e.Name)
		}
	}
	return env, nil
}

// expandKubernetes expands $(NAME) references to defined variables as
// Kubernetes does in container args and env values: "$$" is a literal "$",
// and a reference to an undefined variable stays as written.
func expandKubernetes(s string, env map[string]string) string {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			out.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				out.WriteString(s[i:])
				return out.String()
			}
			name := s[i+2 : i+2+end]
			if value, ok := env[name]; ok {
				out.WriteString(value)
			} else {
				out.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			out.WriteByte('$')
		}
	}
	return out.String()
}

// serveConfig loads the configuration a worker container would start with:
// the image's entrypoint is `mocker-server`, so args must be "serve"
// followed by serve flags. The args go
// through the same steps as cmd/mocker-server: Kubernetes variable
// expansion, RewriteArgs, the registered serve flag set, then config.Load
// with the container's environment and the pod name as host name.
func serveConfig(c corev1.Container, pod podIdentity) (*config.Config, []string, error) {
	if len(c.Command) != 0 {
		return nil, nil, fmt.Errorf("container %s overrides the image entrypoint with %q", c.Name, c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		return nil, nil, fmt.Errorf("container %s: args must start with the serve subcommand, got %q", c.Name, c.Args)
	}
	env, err := containerEnv(c, pod)
	if err != nil {
		return nil, nil, err
	}
	args := make([]string, 0, len(c.Args)-1)
	for _, a := range c.Args[1:] {
		expanded := expandKubernetes(a, env)
		if strings.Contains(expanded, "$(") {
			return nil, nil, fmt.Errorf("arg %q refers to a variable the container does not define", a)
		}
		args = append(args, expanded)
	}
	return loadServeFlags(args, config.LoadOptions{
		LookupEnv: func(key string) (string, bool) { v, ok := env[key]; return v, ok },
		Hostname:  func() (string, error) { return pod.name, nil },
	})
}

// loadServeFlags parses serve flags with the server's own flag set and
// loads the configuration they describe; base supplies the environment
// and host name lookups.
func loadServeFlags(args []string, base config.LoadOptions) (*config.Config, []string, error) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	config.RegisterFlags(fs)
	if err := fs.Parse(config.RewriteArgs(args)); err != nil {
		return nil, nil, fmt.Errorf("serve flags: %w", err)
	}
	// The chart always passes --model; a positional MODEL would be an
	// extraArgs mistake.
	if positional := fs.Args(); len(positional) > 0 {
		return nil, nil, fmt.Errorf("unexpected positional args %q (use --model)", positional)
	}
	opts := config.OptionsFromFlags(fs)
	opts.LookupEnv, opts.Hostname = base.LookupEnv, base.Hostname
	cfg, warnings, err := config.Load(opts)
	if err != nil {
		return nil, warnings, fmt.Errorf("config: %w", err)
	}
	return cfg, warnings, nil
}
