package cli

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }
