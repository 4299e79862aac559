# Operations (issue 15): monitoring with Debian's Prometheus, a fleet behind
# HAProxy (scripts/fleet), and `cmake --install`. The e2e tests skip when
# prometheus or haproxy is missing; scripts/install-deps installs both.
tf_test(ops_e2e_tests SOURCES prometheus_test.cpp fleet_test.cpp install_test.cpp
        DEPS nlohmann_json::nlohmann_json Boost::headers Threads::Threads LABELS e2e)
target_include_directories(ops_e2e_tests PRIVATE ${CMAKE_SOURCE_DIR})
target_compile_definitions(ops_e2e_tests PRIVATE TF_CMAKE_COMMAND="${CMAKE_COMMAND}" TF_BUILD_DIR="${CMAKE_BINARY_DIR}")
add_dependencies(ops_e2e_tests tensorfold)

# The Prometheus files in deploy/ as promtool reads them: the rules parse,
# the example configuration loads them, and each alert fires on the series
# it is written for (deploy/prometheus/tensorfold-rules.test.yml).
find_program(TF_PROMTOOL promtool)
set(prometheus_dir ${CMAKE_SOURCE_DIR}/deploy/prometheus)
foreach(check "rules;check;rules;tensorfold-rules.yml" "config;check;config;prometheus.yml"
              "alerts;test;rules;tensorfold-rules.test.yml")
  list(GET check 0 name)
  list(SUBLIST check 1 3 arguments)
  if(TF_PROMTOOL)
    add_test(NAME deploy_promtool_${name} COMMAND ${TF_PROMTOOL} ${arguments} WORKING_DIRECTORY ${prometheus_dir})
  else()
    # Skipped (77), not failed: promtool comes with Debian's prometheus.
    add_test(NAME deploy_promtool_${name} COMMAND sh -c "echo 'promtool not found: scripts/install-deps'; exit 77")
  endif()
  set_tests_properties(deploy_promtool_${name} PROPERTIES LABELS deploy SKIP_RETURN_CODE 77)
endforeach()

# The example systemd unit as systemd reads it, with the built binary in
# place of /usr/local/bin/tensorfold (verify checks that ExecStart exists) and
# the environment file made optional (it holds a secret, so none ships).
find_program(TF_SYSTEMD_ANALYZE systemd-analyze)
if(TF_SYSTEMD_ANALYZE)
  add_test(NAME deploy_systemd_unit
           COMMAND sh -c "dir=$(mktemp -d) && sed -e 's|/usr/local/bin/tensorfold|$<TARGET_FILE:tensorfold>|' \
-e 's|^EnvironmentFile=|EnvironmentFile=-|' '${CMAKE_SOURCE_DIR}/deploy/systemd/tensorfold.service' \
> \"$dir/tensorfold.service\" && ${TF_SYSTEMD_ANALYZE} verify \"$dir/tensorfold.service\"; status=$?; rm -rf \"$dir\"; exit $status")
else()
  add_test(NAME deploy_systemd_unit COMMAND sh -c "echo 'systemd-analyze not found'; exit 77")
endif()
set_tests_properties(deploy_systemd_unit PROPERTIES LABELS deploy SKIP_RETURN_CODE 77)
