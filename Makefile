# Thin wrapper over CMake. `make run` = the main job; `make test` = the tests.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build run test test-gpu clean format
all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/xstage run

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-gpu: build
	ctest --test-dir $(BUILD) --output-on-failure -L gpu

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD)
