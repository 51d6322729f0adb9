module github.com/monagent/monagent

go 1.26.8

require (
	github.com/influxdata/line-protocol/v2 v2.2.1
	golang.org/x/sys v0.49.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/facebook/time v0.0.0-20260822211804-f81aedc1c1e3
	github.com/sirupsen/logrus v1.9.1 // indirect
)
