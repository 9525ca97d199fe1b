#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/mman.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define MB (1<<20)
int main(int argc,char**argv){
  int nproc=atoi(argv[1]); int ndst=atoi(argv[2]); int iters=atoi(argv[3]); int cma=argc>4?atoi(argv[4]):0;
  char *src=mmap(0,MB,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0); memset(src,1,MB);
  pid_t parent=getpid();
  double t0=now();
  for(int p=0;p<nproc;p++){ if(fork()==0){
     char *src2=malloc(MB); memset(src2,1,MB);
     char **d=malloc(ndst*sizeof(char*)); for(int i=0;i<ndst;i++){d[i]=malloc(MB);memset(d[i],0,MB);}
     double a=now();
     for(int it=0;it<iters;it++) for(int i=0;i<ndst;i++){
       if(cma){struct iovec l={d[i],MB},r={src,MB}; process_vm_readv(parent,&l,1,&r,1,0);} else memcpy(d[i],src,MB);}
     double b=now(); printf("proc %d: %.1f us per 1 MiB copy, %.2f GB/s\n",p,(b-a)*1e6/(iters*ndst),(double)iters*ndst*MB/(b-a)/1e9); exit(0);} }
  while(wait(0)>0);
  double t1=now(); printf("total %.1f us per 1MiB copy aggregate\n",(t1-t0)*1e6/(iters*ndst*nproc));
}
