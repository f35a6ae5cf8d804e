import sys, surrobench
sys.path.insert(0, "/tmp/trial2-work/hidden")
r = surrobench.optimize("hiddenmod:build", shapes=[8], batches=[1], device="cpu", threads=2, only="threads=1", rounds=2, warmup=1, iters=4, input_sets=1, processes=1, db="apih.db")
for c in r.to_json()["configs"]:
    print("recommended", c.get("recommended")); print("notes", c["notes"])
