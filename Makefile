# Thin wrapper: everything real lives in CMake (CMakeLists.txt).
#
#   make                       configure and build in ./build
#   make install PREFIX=dir    install into dir (default ./_install)
#   make example               install, then build examples/hello.c against
#                              the installed tree and run it on 4 processes
#   make test                  the whole test suite: Go checks and unit tests,
#                              then the C tests under acprun (ctest), and
#                              which tests could not run here, and why
#   make deps                  install missing build dependencies (Debian)
#   make clean                 remove ./build

BUILD  ?= build
PREFIX ?= _install
# cmake --install and pkg-config need an absolute prefix.
override PREFIX := $(abspath $(PREFIX))
CC     ?= cc

PKG_CONFIG_ACP = PKG_CONFIG_PATH=$(PREFIX)/lib/pkgconfig pkg-config

.PHONY: all deps configure install example test clean

all: configure
	cmake --build $(BUILD) --parallel

deps:
	@scripts/install-deps

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_LIBDIR=lib

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

example: install
	$(CC) -Wall -Wextra -O2 -o $(BUILD)/hello examples/hello.c \
	  $$($(PKG_CONFIG_ACP) --cflags --libs acp) $$($(PKG_CONFIG_ACP) --variable=rpath acp)
	$(PREFIX)/bin/acprun -np 4 --timeout 60 $(BUILD)/hello

test: all
	scripts/check-go
	{ ctest --test-dir $(BUILD) --output-on-failure --timeout 300; \
	  echo $$? > $(BUILD)/ctest-status; } | tee $(BUILD)/ctest-output.txt
	scripts/report-skipped $(BUILD) $(BUILD)/ctest-output.txt
	exit $$(cat $(BUILD)/ctest-status)

clean:
	rm -rf $(BUILD)
