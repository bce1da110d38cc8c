package simulator

import (
	corev1 "k8s.io/api/core/v1"
)

// hostPort is a port a pod binds on its node.
type hostPort struct {
	ip       string
	protocol corev1.Protocol
	port     int32
}

// podHostPorts returns the host ports of a pod's containers and sidecars.
func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			out = append(out, hostPort{ip: p.HostIP, protocol: proto, port: p.HostPort})
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return out
}

// conflicts reports whether two host ports cannot share a node: same port and
// protocol, and the same IP or either one on all addresses.
func (h hostPort) conflicts(o hostPort) bool {
	if h.port != o.port || h.protocol != o.protocol {
		return false
	}
	wild := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	return h.ip == o.ip || wild(h.ip) || wild(o.ip)
}

// portsConflict reports the first of want that conflicts with used.
func portsConflict(used, want []hostPort) (hostPort, bool) {
	for _, w := range want {
		for _, u := range used {
			if w.conflicts(u) {
				return w, true
			}
		}
	}
	return hostPort{}, false
}
