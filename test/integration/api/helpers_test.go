package api_test

import (
	"encoding/json"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func withCodecs(config *rest.Config) *rest.Config {
	config.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return config
}

func decodeJSON(data []byte, into any) error { return json.Unmarshal(data, into) }
