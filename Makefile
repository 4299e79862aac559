# The two set-up commands of README.md:
#   make serve   install dependencies, build, start the server on models/tinycode with Recall on
#   make test    install dependencies, build, run the whole test suite
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
SERVE_FLAGS ?= --recall

.PHONY: deps configure build serve test clean

deps:
	./scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DTF_WERROR=ON $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

serve: build
	./$(BUILD_DIR)/tensorfold serve models/tinycode $(SERVE_FLAGS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 900

clean:
	rm -rf $(BUILD_DIR)
