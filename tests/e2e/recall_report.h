// The record's report (GET /v1/recall) and the waits the Recall end-to-end
// tests share. The writer actor takes a request's copy outcomes and then its
// ids after the reply has gone out, so a report read right after a reply may
// not show them yet: these wait until the report shows the awaited event,
// reading it again after each line the server writes (the writer logs one
// per add and erase at debug level, which ServerProcess runs at), and a
// deadline that passes is a failure naming what was awaited.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "child_process.h"
#include "server_process.h"

namespace tf::e2e {

inline nlohmann::json recall_report(const ServerProcess& server) {
    const Response r = server.get("/v1/recall");
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body);
}

// Until `condition` holds for the report; the last report read either way.
// The report is read again after each new piece of the server's output:
// the writer logs a line once an add or an erase shows in the report.
inline nlohmann::json wait_for_report(ServerProcess& server,
                                      const std::function<bool(const nlohmann::json&)>& condition,
                                      const std::string& what) {
    nlohmann::json report;
    const bool seen = server.wait_for_output_change([&] {
        report = recall_report(server);
        return condition(report);
    });
    if (!seen) ADD_FAILURE() << "waited " << kEventDeadline.count() << " s for " << what << "; last report: " << report;
    return report;
}

// Until the record holds at least `ids` ids.
inline nlohmann::json wait_for_ids(ServerProcess& server, uint64_t ids) {
    return wait_for_report(
        server, [ids](const nlohmann::json& r) { return r["ids"].get<uint64_t>() >= ids; },
        "at least " + std::to_string(ids) + " ids");
}

// Until the writer has taken `adds` requests since the server started (or
// since the last DELETE). A request's copy outcomes reach the writer (from
// its stream actor, or from the lane while it drives a lone stream) before
// its ids do, and the writer takes its mailbox in order, so then the
// report's landing counters are final for those requests too. Only a
// writing record counts adds.
inline nlohmann::json wait_for_adds(ServerProcess& server, uint64_t adds) {
    return wait_for_report(
        server, [adds](const nlohmann::json& r) { return r["adds"].get<uint64_t>() >= adds; },
        std::to_string(adds) + " adds");
}

}  // namespace tf::e2e
