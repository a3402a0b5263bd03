#!/usr/bin/perl
# Fold the call stacks of `perf script` output and list the frames that
# cost the most.  Written for nbdcp's bench/profile.sh.
#
#   perf script -i perf.data | fold-stacks.pl --folded out.folded --top 25
#
# Input: perf script's default text, one sample per paragraph: a header
# line "COMM TID [CPU] TIME: PERIOD EVENT:" then one frame a line,
# innermost first, "ADDR SYMBOL+0xOFF (DSO)"; frames perf marks
# "(inlined)" are kept as frames of their own.
#
# --folded FILE  writes one line per distinct stack, outermost frame
#                first, frames joined by ';', then the sample count:
#                "nbdcp-worker;start_thread;worker_loop;nbd_aio_pread 12"
#                (the usual input of flame graph tools).
# --top N        prints Markdown tables to stdout: the N frames with the
#                most samples where they are the innermost frame (self),
#                the N with the most samples anywhere on the stack
#                (total, counted once per sample), and samples per DSO
#                and per thread.
# --by-dso       names each frame "symbol [dso]" instead of "symbol".
# Frames perf could not name become "[unknown DSO]".
use strict;
use warnings;
use Getopt::Long;

my ($folded_file, $top, $by_dso, $program) = (undef, 25, 0, "nbdcp");
GetOptions("folded=s" => \$folded_file, "top=i" => \$top,
           "by-dso" => \$by_dso, "program=s" => \$program)
  or die "usage: $0 [--folded FILE] [--top N] [--by-dso] [--program NAME]"
       . " < perf-script.txt\n";

my (%stacks, %self, %total, %dso_samples, %thread_samples, %where, %own);
my %readable;
my ($samples, $complete) = (0, 0);
my ($comm, @frames);

sub short_dso {
  my ($d) = @_;
  return "kernel" if $d =~ /kernel\.kallsyms|^\[kernel/;
  $d =~ s{.*/}{};
  $d =~ s/\.so(\.[0-9.]+)?$/.so/;
  return $d;
}

sub finish_sample {
  return unless defined $comm;
  if (@frames) {
    # An inlined frame shares its address with the real function
    # outside it, whose line (further down) names the DSO.  perf also
    # marks some glibc frames "inlined" with no such function: those
    # are glibc's by their names, or else of an unknown DSO.
    for my $i (reverse 0 .. $#frames) {
      next if defined $frames[$i][1];
      my $n = $frames[$i + 1];
      $frames[$i][1] =
        $n && $n->[2] eq $frames[$i][2] ? $n->[1]
        : $frames[$i][0] =~ /^__(GI_|libc_|pthread_)/ ? "libc.so" : "?";
    }
    for my $f (@frames) {
      $f->[0] = "[unknown $f->[1]]" if $f->[0] eq "[unknown]";
      $f->[0] .= " [$f->[1]]" if $by_dso;
    }
    # An inlined frame of the same name as its caller (glibc's
    # __libc_recv, say) and unnamed frames in a row are one frame.
    my @c = ($frames[0]);
    for my $f (@frames[1 .. $#frames]) {
      push @c, $f unless $f->[0] eq $c[-1][0];
    }
    @frames = @c;
    # The innermost frame in the program itself: which of its own
    # functions the time is spent under.
    for my $f (@frames) {
      if ($f->[1] eq $program) { $own{$f->[0]}++; last }
    }
    $samples++;
    $complete++ if $frames[-1][0] =~ /^(clone3?|start_thread|_start|__libc_start_main\S*|__libc_start_call_main|main)$/;
    $thread_samples{$comm}++;
    my @names = map { $_->[0] } @frames;
    my $key = join(";", $comm, reverse @names);
    $stacks{$key}++;
    unless (exists $readable{$key}) {
      # Outermost first; the kernel part shortened to its entry point
      # and its innermost frame.
      my @o = reverse @frames;
      my @u = map { $_->[0] } grep { $_->[1] ne "kernel" } @o;
      my @k = map { $_->[0] } grep { $_->[1] eq "kernel" } @o;
      shift @u while @u > 1 && $u[0] =~ /^(clone3?|start_thread|_start|__libc_start_main.*|__libc_start_call_main)$/;
      my $r = join(" > ", @u);
      if (@k) {
        $r .= " > [kernel: " . ($k[0] eq $k[-1] ? $k[0] : "$k[0] ... $k[-1]") . "]";
      }
      $readable{$key} = $r;
    }
    $self{$names[0]}++;
    $dso_samples{$frames[0][1]}++;
    my %seen;
    for my $f (@frames) {
      $where{$f->[0]} //= $f->[1];
      next if $seen{$f->[0]}++;
      $total{$f->[0]}++;
    }
  }
  $comm = undef;
  @frames = ();
}

while (my $line = <STDIN>) {
  chomp $line;
  if ($line =~ /^\S/) {
    finish_sample();
    # "nbdcp 29710  2345.12: 2004008 cpu-clock:" or with "[000]".
    ($comm) = $line =~ /^(.+?)\s+\d+(?:\/\d+)?\s/;
    $comm //= (split ' ', $line)[0];
    $comm =~ s/\s+/_/g;
  } elsif ($line =~ /^\s*$/) {
    finish_sample();
  } elsif (defined $comm &&
           $line =~ /^\s+([0-9a-f]+)\s+(.*?)\s+\(([^()]*)\)\s*$/) {
    my ($addr, $sym, $dso) = ($1, $2, $3);
    $dso = $dso eq "inlined" ? undef : short_dso($dso);
    $sym =~ s/\+0x[0-9a-f]+$//;
    $sym = "[unknown]" if $sym eq "";
    push @frames, [$sym, $dso, $addr];
  }
}
finish_sample();

if (defined $folded_file) {
  open my $fh, ">", $folded_file or die "$folded_file: $!\n";
  for my $st (sort { $stacks{$b} <=> $stacks{$a} || $a cmp $b } keys %stacks) {
    print $fh "$st $stacks{$st}\n";
  }
  close $fh;
}

sub table {
  my ($title, $h, $col, $n, $nowhere) = @_;
  print "### $title\n\n";
  print $nowhere ? "| $col | samples | % |\n| --- | ---: | ---: |\n"
                 : "| $col | samples | % | where |\n| --- | ---: | ---: | --- |\n";
  my $i = 0;
  for my $k (sort { $h->{$b} <=> $h->{$a} || $a cmp $b } keys %$h) {
    last if $n && $i++ >= $n;
    (my $name = $k) =~ s/\|/\\|/g;
    printf "| `%s` | %d | %.1f |", $name, $h->{$k},
      100 * $h->{$k} / ($samples || 1);
    print $nowhere ? "\n" : " " . ($where{$k} // "") . " |\n";
  }
  print "\n";
}

if ($top) {
  printf "%d samples; %.0f%% of them unwound to the thread's start.\n\n",
    $samples, 100 * $complete / ($samples || 1);
  print "**Most stacks are cut short** (the DWARF stack copy failed): "
      . "the Total and Under tables undercount; record again.\n\n"
    if $samples && $complete < $samples / 2;
  table("Self: innermost frame of each sample", \%self, "function", $top);
  table("Total: anywhere on the stack (once per sample)", \%total,
        "function", $top);
  table("Under which $program function: its innermost own frame",
        \%own, "function", $top);
  table("Self samples per DSO", \%dso_samples, "DSO", 0, 1);
  table("Samples per thread", \%thread_samples, "thread", 0, 1);
  # The heaviest whole stacks, by their readable form (stacks that differ
  # only inside the kernel are added up).
  my %r;
  $r{$readable{$_}} += $stacks{$_} for keys %stacks;
  print "### Heaviest stacks (user frames outermost first, kernel shortened)\n\n";
  print "| samples | % | stack |\n| ---: | ---: | --- |\n";
  my $i = 0;
  for my $k (sort { $r{$b} <=> $r{$a} || $a cmp $b } keys %r) {
    last if $i++ >= ($top < 15 ? $top : 15);
    (my $name = $k) =~ s/\|/\\|/g;
    printf "| %d | %.1f | `%s` |\n", $r{$k}, 100 * $r{$k} / ($samples || 1), $name;
  }
  print "\n";
}
