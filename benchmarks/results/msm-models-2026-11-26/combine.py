# The worst relative RMS error per MSM setting over the sweeps in this folder (made by /tmp/acc runs of
# `espgrid bench --sweep msm-accuracy --sweep-only --spacing 1.0 --seed 1 --model ...`; see sweep.log in each).
import csv,glob,os,collections
rows=collections.defaultdict(dict)
for d in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), '*/bench-msm-accuracy.csv'))):
    tag=os.path.basename(os.path.dirname(d)).replace('modeldebyeionicstrength','I=').replace('dielectric78.54','').replace('inputdata_fasciculin2.pqr','(fas)')
    for r in csv.DictReader(open(d)):
        key=(r['order'],r['cutoff'],r['msm_spacing'])
        rows[key][(tag,r['molecule'][:6])]=float(r['relative_rms'])
cols=sorted({c for v in rows.values() for c in v})
print('setting',' '.join(f'{t}/{m}' for t,m in cols))
for k in sorted(rows, key=lambda k:(k[0],float(k[1])/float(k[2]))):
    v=rows[k]; worst=max(v.values())
    print(k, ' '.join(f"{v.get(c,float('nan')):.2e}" for c in cols), 'WORST %.2e'%worst)
