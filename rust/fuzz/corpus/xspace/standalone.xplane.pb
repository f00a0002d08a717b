
õ	/host:CPU˜’!Host Threads/4242/ROCTX"À–±€è’&"8"€­â€áë"8"ÀÃ“€‡§"8"€•õ*"8H€•õ*PZ(Host Threads/4242/ROCTX (xla_gpu_exec_0)K“!Host Threads/4243/ROCTX"À–±ÀÑá#"8"€¶Ü€…Ô"8H€è’&PpÌ!Host Threads/4300/ROCTX"€ÚÄ	€ÚÄ	"8"€áë"8H€áëPZ(Host Threads/4300/ROCTX (xla_gpu_exec_2)"
checkpoint"jit_train_step"
async_copy"step_marker"host_callback"2.*Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#"loop_fusion_3_kernel*
nvtx_range*2.*Thunk:#hlo_op=fusion.3,unique_hlo_op_id=7#*loop_fusion_3_kernel*
async_copy*
checkpoint*jit_train_step*step_marker*host_callback
eTask Environment*profile_stop_time*profile_start_time2€€è÷¬šÓ„2 î÷¬šÓ„#roctx_utils: 3 ROCTX events dropped"fixture-host