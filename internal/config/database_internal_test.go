package config

import "testing"

func TestDSNFromSecret(t *testing.T) {
	for _, tc := range []struct{ name, secret, proxy, want, err string }{
		{"rds", `{"username":"app","password":"p@ss word","host":"db.example","port":5432,"dbname":"k8sapi","engine":"postgres"}`,
			"", "postgres://app:p%40ss%20word@db.example:5432/k8sapi?sslmode=require", ""},
		{"through the proxy", `{"username":"app","password":"pw","host":"db.example","port":6432,"dbname":"k8sapi"}`,
			"prx.proxy-abc.eu-west-1.rds.amazonaws.com", "postgres://app:pw@prx.proxy-abc.eu-west-1.rds.amazonaws.com:5432/k8sapi?sslmode=require", ""},
		{"string port, no dbname, local", `{"username":"postgres","host":"127.0.0.1","port":"6543","sslmode":"disable"}`,
			"", "postgres://postgres:@127.0.0.1:6543/postgres?sslmode=disable", ""},
		{"no port", `{"username":"u","password":"p","host":"::1"}`, "", "postgres://u:p@[::1]:5432/postgres?sslmode=require", ""},
		{"bad", `{"engine":"mysql","port":0}`, "", "",
			"database secret: username is empty\ndatabase secret: host is empty\ndatabase secret: engine \"mysql\" is not PostgreSQL\ndatabase secret: port must be a number from 1 to 65535"},
		{"not json", `password=hunter2`, "", "", "database secret: not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dsnFromSecret(tc.secret, tc.proxy)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
