package controller

import (
	"fmt"
	"os"
)

// LoadConfig reads a properties file (Apache's controller or namesrv
// keys) into a Config over the defaults. It returns the keys the
// controller does not know, and the file's properties for the caller's
// own keys.
func LoadConfig(path string) (Config, map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, nil, nil, err
	}
	defer f.Close()
	props, err := ReadProperties(f)
	if err != nil {
		return Config{}, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg := DefaultConfig()
	unknown, err := cfg.Apply(props)
	if err != nil {
		return Config{}, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, props, unknown, nil
}
