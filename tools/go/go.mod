module tidelog.dev/tools

go 1.22
