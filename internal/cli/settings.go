package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// fileSettings is the config file (~/.config/k8sapi/config.yaml):
//
//	url: https://k8sapi.example.com
//	token: ...
type fileSettings struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// settings are where the API is and who calls it.
type settings struct {
	URL, Token string
}

// defaultConfigPath is the config file under the user's config directory
// ($XDG_CONFIG_HOME, else ~/.config).
func defaultConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "k8sapi", "config.yaml")
}

// resolveSettings takes each setting from the flags, then K8SAPI_URL and
// K8SAPI_TOKEN, then the config file: the nearer to the command, the
// stronger. An absent default config file is no error; a named one is.
func resolveSettings(flags settings, getenv func(string) string, path string, named bool) (settings, error) {
	file, err := readConfigFile(path, named)
	if err != nil {
		return settings{}, err
	}
	s := settings{
		URL:   cmp.Or(flags.URL, getenv("K8SAPI_URL"), file.URL),
		Token: cmp.Or(flags.Token, getenv("K8SAPI_TOKEN"), file.Token),
	}
	if s.URL == "" {
		return s, usageErrorf("no API URL: pass --url, set K8SAPI_URL, or put url: in %s", path)
	}
	if s.Token == "" {
		return s, usageErrorf("no token: pass --token, set K8SAPI_TOKEN, or put token: in %s", path)
	}
	return s, nil
}

func readConfigFile(path string, named bool) (fileSettings, error) {
	var f fileSettings
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return f, nil
	}
	if err != nil {
		return f, usageErrorf("reading the config file: %v", err)
	}
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return f, usageErrorf("config file %s: %v", path, err)
	}
	return f, nil
}

// usageError is a mistake in how the CLI was called: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}
